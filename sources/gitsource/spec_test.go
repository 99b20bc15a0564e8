package gitsource

import (
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/sourcetest"
)

func TestSpec(t *testing.T) {
	t.Parallel()
	info := func(url, ref, branch string) sources.Info {
		return sources.Info{Interval: time.Minute, URL: url, Ref: ref, Branch: branch}
	}
	const repo = "https://git.example/r.git"
	sourcetest.Run(t, func() sources.Spec { return &Spec{} }, []sourcetest.Case{
		{Name: "defaults", Text: "url: " + repo, Info: info(repo, "main", "main")},
		{Name: "branch and path", Text: "{url: " + repo + ", branch: prod, path: deploy, interval: 30s}",
			Info: sources.Info{Interval: 30 * time.Second, URL: repo, Ref: "prod", Branch: "prod", Path: "deploy"}},
		{Name: "tag", Text: "{url: " + repo + ", tag: v1}", Info: info(repo, "tag:v1", "")},
		{Name: "commit", Text: "{url: " + repo + ", commit: abc}", Info: info(repo, "commit:abc", "")},
		{Name: "credentials redacted", Text: "url: https://u:hunter2@git.example/r.git", Info: info("https://u@git.example/r.git", "main", "main")},
		{Name: "local path resolved", Text: "url: repo", Info: info("/cfg/repo", "main", "main")},
		{Name: "ssh files", Text: "{url: git@git.example:o/r.git, auth: {sshKeyFile: id, knownHostsFile: /etc/kh}}",
			Info: info("git@git.example:o/r.git", "main", "main"), Files: []string{"/cfg/id", "/etc/kh"}},
		{Name: "app", Text: "{url: https://github.com/o/r.git, auth: {githubApp: {appID: '7', installationID: 8, privateKeyFile: app.pem}}}",
			Info: info("https://github.com/o/r.git", "main", "main"), Files: []string{"/cfg/app.pem"}},
		{Name: "unknown key", Text: "{url: x, brnch: y}", Err: "field brnch not found"},
		{Name: "url required", Text: "branch: main", Err: "sources[0].git.url: required"},
		{Name: "exclusive refs", Text: "{url: x, tag: v1, commit: abc}", Err: "sources[0].git: branch, tag and commit are exclusive"},
		{Name: "interval", Text: "{url: x, interval: 500ms}", Err: "sources[0].git.interval: 500ms is below 1s"},
		{Name: "password and key", Text: "{url: x, auth: {password: p, sshKeyFile: k}}", Err: "sources[0].git.auth: password and sshKeyFile are exclusive"},
		{Name: "app fields", Text: "{url: " + repo + ", auth: {githubApp: {}}}", Err: "sources[0].git.auth.githubApp.appID: required"},
		{Name: "app over ssh", Text: "{url: git@github.com:o/r.git, auth: {githubApp: {appID: 1, installationID: 2, privateKeyFile: k}}}",
			Err: "sources[0].git.auth.githubApp: applies to https urls only"},
		{Name: "plaintext credentials", Text: "url: http://u:p@git.example/r.git", Err: "sources[0].git.url"},
		{Name: "bad id", Text: "{url: x, auth: {githubApp: {appID: seven}}}", Err: "expected an integer id"},
	})
}

func TestOpen(t *testing.T) {
	t.Parallel()
	s := &Spec{}
	if err := sourcetest.Decode(s, "{url: https://git.example/r.git, tag: v1}"); err != nil {
		t.Fatal(err)
	}
	src, err := Open(s, sources.Env{Name: "a", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if g := src.(*Source); g.cfg.Tag != "v1" || g.cfg.Timeout != DefaultTimeout {
		t.Errorf("config %+v", g.cfg)
	}
	_ = src.Close()
	// A constructor's refusal is no source at all (not a nil *Source in an interface).
	if src, err := Open(s, sources.Env{Name: "a", Dir: t.TempDir(), Timeout: -time.Second}); err == nil || src != nil {
		t.Errorf("negative timeout: %v, %v", src, err)
	}
	if _, err := Open(&wrongSpec{}, sources.Env{Name: "a"}); err == nil {
		t.Error("another kind's spec accepted")
	}
}

// wrongSpec is a spec of another kind.
type wrongSpec struct{ Spec }

func (*wrongSpec) Kind() string { return "other" }
