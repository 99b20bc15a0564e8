package gitsource

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/sources"
)

// decodeSpec decodes a git block as the config loader does: strictly, then defaults with
// paths resolved against /cfg, then validation.
func decodeSpec(t *testing.T, text string) (*Spec, error) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	s.Defaults(func(p string) string {
		if p == "" || strings.HasPrefix(p, "/") {
			return p
		}
		return "/cfg/" + p
	})
	return &s, s.Validate("sources[0].git")
}

func TestSpecDecode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       sources.Info
		files      []string
		err        string
	}{
		{"defaults", "url: https://git.example/r.git", sources.Info{Interval: time.Minute, URL: "https://git.example/r.git", Ref: "main", Branch: "main"}, nil, ""},
		{"branch and path", "{url: https://git.example/r.git, branch: prod, path: deploy, interval: 30s}",
			sources.Info{Interval: 30 * time.Second, URL: "https://git.example/r.git", Ref: "prod", Branch: "prod", Path: "deploy"}, nil, ""},
		{"tag", "{url: https://git.example/r.git, tag: v1}", sources.Info{Interval: time.Minute, URL: "https://git.example/r.git", Ref: "tag:v1"}, nil, ""},
		{"commit", "{url: https://git.example/r.git, commit: abc}", sources.Info{Interval: time.Minute, URL: "https://git.example/r.git", Ref: "commit:abc"}, nil, ""},
		{"credentials redacted", "url: https://u:hunter2@git.example/r.git", sources.Info{Interval: time.Minute, URL: "https://u@git.example/r.git", Ref: "main", Branch: "main"}, nil, ""},
		{"local path resolved", "url: repo", sources.Info{Interval: time.Minute, URL: "/cfg/repo", Ref: "main", Branch: "main"}, nil, ""},
		{"ssh files", "{url: git@git.example:o/r.git, auth: {sshKeyFile: id, knownHostsFile: /etc/kh}}",
			sources.Info{Interval: time.Minute, URL: "git@git.example:o/r.git", Ref: "main", Branch: "main"}, []string{"/cfg/id", "/etc/kh"}, ""},
		{"app", "{url: https://github.com/o/r.git, auth: {githubApp: {appID: '7', installationID: 8, privateKeyFile: app.pem}}}",
			sources.Info{Interval: time.Minute, URL: "https://github.com/o/r.git", Ref: "main", Branch: "main"}, []string{"/cfg/app.pem"}, ""},
		{"unknown key", "{url: x, brnch: y}", sources.Info{}, nil, "field brnch not found"},
		{"url required", "branch: main", sources.Info{}, nil, "sources[0].git.url: required"},
		{"exclusive refs", "{url: x, tag: v1, commit: abc}", sources.Info{}, nil, "sources[0].git: branch, tag and commit are exclusive"},
		{"interval", "{url: x, interval: 500ms}", sources.Info{}, nil, "sources[0].git.interval: 500ms is below 1s"},
		{"password and key", "{url: x, auth: {password: p, sshKeyFile: k}}", sources.Info{}, nil, "sources[0].git.auth: password and sshKeyFile are exclusive"},
		{"app fields", "{url: https://github.com/o/r.git, auth: {githubApp: {}}}", sources.Info{}, nil, "sources[0].git.auth.githubApp.appID: required"},
		{"app over ssh", "{url: git@github.com:o/r.git, auth: {githubApp: {appID: 1, installationID: 2, privateKeyFile: k}}}", sources.Info{}, nil,
			"sources[0].git.auth.githubApp: applies to https urls only"},
		{"plaintext credentials", "url: http://u:p@git.example/r.git", sources.Info{}, nil, "sources[0].git.url"},
		{"bad id", "{url: x, auth: {githubApp: {appID: seven}}}", sources.Info{}, nil, "expected an integer id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := decodeSpec(t, tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Info(); got != tc.want {
				t.Errorf("info %+v, want %+v", got, tc.want)
			}
			if got := s.Files(); !reflect.DeepEqual(got, tc.files) {
				t.Errorf("files %q, want %q", got, tc.files)
			}
			if s.Kind() != "git" {
				t.Errorf("kind %q", s.Kind())
			}
		})
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	s, err := decodeSpec(t, "{url: https://git.example/r.git, tag: v1}")
	if err != nil {
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
