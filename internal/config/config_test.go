package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources/gitsource"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// fullExample sets a little of everything, from the environment too.
const fullExample = `
database: {url: ""}
dataDir: data
sources:
  - name: infra
    git:
      url: https://github.com/acme/infra.git
      path: manifests
      interval: 30s
      auth: {username: x-access-token, password: "${GITHUB_TOKEN}"}
    webhook: {secret: "${HOOK}"}
    prune: false
  - name: local
    dir: {path: ./repo}
    prune: {maxFraction: 0.8}
actions:
  - name: provision
    type: exec
    config: {command: ["./p.sh"], timeout: 5m, env: {N: "${N}"}}
reconcile: {workers: 4, backoff: {initial: 1s, max: 1m}}
`

func TestParseFullExample(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(fullExample), "/etc/trueup", env(map[string]string{"GITHUB_TOKEN": "ghp_secretvalue", "HOOK": "hooksecret", "N": "123"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/etc/trueup/data" || c.Server.Listen != DefaultListen {
		t.Errorf("dataDir %q listen %q", c.DataDir, c.Server.Listen)
	}
	g := c.Sources[0].Git
	if g.Branch != "main" || g.Interval != 30*time.Second || g.Auth.Password != "ghp_secretvalue" {
		t.Errorf("git %+v", g)
	}
	if c.Sources[0].PruneEnabled() || !c.Sources[1].PruneEnabled() || c.Sources[1].Prune.MaxFraction != 0.8 {
		t.Error("prune settings wrong")
	}
	if c.Sources[1].Dir.Path != "/etc/trueup/repo" {
		t.Errorf("dir path %q", c.Sources[1].Dir.Path)
	}
	// An expanded value is a string even when it looks like a number.
	if got := string(c.Actions[0].Config); got != `{"command":["./p.sh"],"env":{"N":"123"},"timeout":"5m"}` {
		t.Errorf("action config %s", got)
	}
	if c.Reconcile.Workers != 4 || c.Reconcile.ResyncInterval != DefaultResyncInterval || c.Reconcile.LeaseTTL != DefaultLeaseTTL {
		t.Errorf("reconcile %+v", c.Reconcile)
	}
	secrets := strings.Join(c.Secrets(), ",")
	if !strings.Contains(secrets, "ghp_secretvalue") || !strings.Contains(secrets, "hooksecret") {
		t.Errorf("secrets %q", secrets)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, yaml, want string }{
		{"unknown top-level key", "sources: []\nbogus: 1\n", "line 2: field bogus not found"},
		{"unknown nested key", "sources:\n  - name: a\n    dir: {path: x, depth: 3}\n", "line 3: field depth not found"},
		{"unknown action key", "actions:\n  - name: a\n    type: exec\n    cfg: {}\n", "line 4: field cfg not found"},
		{"unset variable", "database: {url: \"${NOPE}\"}\n", "line 1: environment variable NOPE is not set"},
		{"git and dir", "sources:\n  - name: a\n    dir: {path: x}\n    git: {url: y}\n", "sources[0]: git, dir and oci are exclusive"},
		{"dir and oci", "sources:\n  - name: a\n    dir: {path: x}\n    oci: {url: oci://ghcr.io/acme/config}\n", "sources[0]: git, dir and oci are exclusive"},
		{"neither", "sources:\n  - name: a\n", "sources[0]: one of git, dir or oci is required"},
		{"oci insecure", "sources:\n  - name: a\n    oci: {url: oci://ghcr.io/acme/config, insecure: true}\n", "sources[0].oci.insecure: only for a loopback registry"},
		{"bad name", "sources:\n  - name: A_b\n    dir: {path: x}\n", "sources[0].name"},
		{"duplicate source", "sources:\n  - name: a\n    dir: {path: x}\n  - name: a\n    dir: {path: y}\n", "declared twice"},
		{"webhook without secret", "sources:\n  - name: a\n    dir: {path: x}\n    webhook: {secret: \"\"}\n", "webhook.secret: required"},
		{"bad duration", "sources:\n  - name: a\n    git: {url: x, interval: soon}\n", "line 3"},
		{"branch and tag", "sources:\n  - name: a\n    git: {url: x, branch: main, tag: v1}\n", "exclusive"},
		{"duplicate action", "actions:\n  - {name: a, type: exec}\n  - {name: a, type: noop}\n", `action "a" declared twice`},
		{"bad log level", "log: {level: loud}\n", "log.level"},
		{"broken yaml", "sources: [\n", "line"},
		{"bad prune", "sources:\n  - name: a\n    dir: {path: x}\n    prune: sometimes\n", "line 4: prune must be"},
		{"bad maxFraction", "sources:\n  - name: a\n    dir: {path: x}\n    prune: {maxFraction: 2}\n", "maxFraction"},
		{"githubApp and password", gitApp("password: pw, ", "appID: 1, installationID: 2, privateKeyFile: k.pem"), "sources[0].git.auth: password and githubApp are exclusive"},
		{"githubApp and sshKeyFile", gitApp("sshKeyFile: id, ", "appID: 1, installationID: 2, privateKeyFile: k.pem"), "sources[0].git.auth: sshKeyFile and githubApp are exclusive"},
		{"githubApp and username", gitApp("username: bot, ", "appID: 1, installationID: 2, privateKeyFile: k.pem"), "sources[0].git.auth: username and githubApp are exclusive"},
		{"githubApp without appID", gitApp("", "installationID: 2, privateKeyFile: k.pem"), "sources[0].git.auth.githubApp.appID: required"},
		{"githubApp without installationID", gitApp("", "appID: 1, privateKeyFile: k.pem"), "sources[0].git.auth.githubApp.installationID: required"},
		{"githubApp without key", gitApp("", "appID: 1, installationID: 2"), "sources[0].git.auth.githubApp.privateKeyFile: required"},
		{"githubApp bad appID", gitApp("", "appID: one, installationID: 2, privateKeyFile: k.pem"), "line 3: expected an integer id"},
		{"githubApp unknown field", gitApp("", "appID: 1, installationID: 2, privateKey: x"), "line 3: field privateKey not found"},
		{"git and dir, dir validated", "sources:\n  - name: a\n    dir: {}\n    git: {url: y}\n", "sources[0].dir.path: required"},
		{"git and dir, git validated", "sources:\n  - name: a\n    dir: {path: x}\n    git: {}\n", "sources[0].git.url: required"},
		{"githubApp bad baseURL", gitApp("", "appID: 1, installationID: 2, privateKeyFile: k.pem, baseURL: \"ftp://u:pw@x\""), "githubApp.baseURL: must be an http(s) URL"},
		{"githubApp ssh url", "sources:\n  - name: a\n    git: {url: \"git@github.com:acme/infra.git\", auth: {githubApp: {appID: 1, installationID: 2, privateKeyFile: k.pem}}}\n",
			"sources[0].git.auth.githubApp: applies to https urls only"},
	}
	checkParse(t, cases, "")
}

// TestKindBlockTypeErrors: a wrong-type value in a source kind's block names the block as
// this package's other blocks are named, not by the kind package's Go type.
func TestKindBlockTypeErrors(t *testing.T) {
	t.Parallel()
	src := "sources:\n  - name: a\n"
	cases := []struct{ name, yaml, want string }{
		{"git string", src + "    git: foo\n", "line 3: cannot unmarshal !!str `foo` into config.Git"},
		{"git list", src + "    git: [1, 2]\n", "line 3: cannot unmarshal !!seq into config.Git"},
		{"auth string", src + "    git: {url: x, auth: foo}\n", "line 3: cannot unmarshal !!str `foo` into config.GitAuth"},
		{"githubApp number", src + "    git: {url: x, auth: {githubApp: 3}}\n", "line 3: cannot unmarshal !!int `3` into config.GitHubApp"},
		{"dir string", src + "    dir: foo\n", "line 3: cannot unmarshal !!str `foo` into config.Dir"},
		{"oci string", src + "    oci: foo\n", "line 3: cannot unmarshal !!str `foo` into config.OCI"},
	}
	checkParse(t, cases, "")
}

// gitApp is a git source whose auth holds other (ending ", ") and a githubApp block.
func gitApp(other, app string) string {
	return "sources:\n  - name: a\n    git: {url: \"https://github.com/acme/infra.git\", auth: {" + other + "githubApp: {" + app + "}}}\n"
}

func TestGitHubApp(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`
sources:
  - name: infra
    git:
      url: https://github.com/acme/infra.git
      auth:
        githubApp:
          appID: 123456
          installationID: "${INSTALLATION_ID}"
          privateKeyFile: secrets/app.pem
  - name: ghes
    git:
      url: https://ghe.example.com/acme/infra.git
      auth:
        githubApp: {appID: 7, installationID: 8, privateKeyFile: /keys/app.pem, baseURL: "https://ghe.example.com/api/v3/"}
`), "/etc/trueup", env(map[string]string{"INSTALLATION_ID": "7654321"}))
	if err != nil {
		t.Fatal(err)
	}
	got := *c.Sources[0].Git.Auth.GitHubApp
	if want := (gitsource.AppSpec{AppID: 123456, InstallationID: 7654321, PrivateKeyFile: "/etc/trueup/secrets/app.pem"}); got != want {
		t.Errorf("githubApp = %+v, want %+v", got, want)
	}
	got = *c.Sources[1].Git.Auth.GitHubApp
	if want := (gitsource.AppSpec{AppID: 7, InstallationID: 8, PrivateKeyFile: "/keys/app.pem", BaseURL: "https://ghe.example.com/api/v3/"}); got != want {
		t.Errorf("githubApp = %+v, want %+v", got, want)
	}
}

func TestDatabaseURLOverride(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("database: {url: postgres://a, readURL: postgres://b}\n"), "/x", env(map[string]string{"TRUEUP_DATABASE_URL": "postgres://u:pw@db/trueup",
		"TRUEUP_DATABASE_READ_URL": "postgres://u:pw2@standby/trueup"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Database.URL != "postgres://u:pw@db/trueup" || c.Database.ReadURL != "postgres://u:pw2@standby/trueup" {
		t.Errorf("url %q, readURL %q", c.Database.URL, c.Database.ReadURL)
	}
	if c.Database.MaxReadLag != DefaultMaxReadLag {
		t.Errorf("maxReadLag %s", c.Database.MaxReadLag)
	}
	if !slices.Contains(c.Secrets(), "postgres://u:pw2@standby/trueup") {
		t.Error("the read URL is not scrubbed from logs")
	}
}

// TestDatabaseSessionURL: the environment overrides the file, the value is scrubbed as the
// url's is, and a session URL without a url is refused.
func TestDatabaseSessionURL(t *testing.T) {
	t.Parallel()
	const session = "postgres://u:direct-secret@db-direct/trueup"
	c, err := Parse([]byte("database: {url: postgres://pooler/trueup, sessionURL: postgres://a}\n"), "/x",
		env(map[string]string{"TRUEUP_DATABASE_SESSION_URL": session}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Database.SessionURL != session {
		t.Errorf("sessionURL %q", c.Database.SessionURL)
	}
	if got := c.ScrubError(errors.New("dial " + session)).Error(); strings.Contains(got, "direct-secret") {
		t.Errorf("scrubbed error %q still shows the session URL", got)
	}
	if _, err := Parse([]byte("database: {sessionURL: postgres://a}\n"), "/x", env(nil)); err == nil ||
		!strings.Contains(err.Error(), "database.sessionURL: set without database.url") {
		t.Errorf("sessionURL without url: %v", err)
	}
	if _, err := Parse([]byte("database: {readURL: postgres://standby/trueup}\n"), "/x", env(nil)); err == nil ||
		!strings.Contains(err.Error(), "database.readURL: set without database.url") {
		t.Errorf("readURL without url: %v", err)
	}
}

func TestSecretCannotChangeStructure(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("actions:\n  - name: a\n    type: exec\n    config: {token: \"${T}\"}\n"), "/x",
		env(map[string]string{"T": "x\", evil: [1]\n  other: {"}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.Actions[0].Config), `"token":"x\", evil: [1]\n  other: {"`) {
		t.Errorf("config %s", c.Actions[0].Config)
	}
}

func TestResyncZeroIsOff(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("reconcile: {resyncInterval: 0s}\n"), "/x", env(nil))
	if err != nil || c.Reconcile.ResyncInterval != 0 {
		t.Errorf("resyncInterval 0: %v %v, want 0 (off)", c.Reconcile.ResyncInterval, err)
	}
	c, err = Parse([]byte("reconcile: {workers: 2}\n"), "/x", env(nil))
	if err != nil || c.Reconcile.ResyncInterval != DefaultResyncInterval {
		t.Errorf("absent resyncInterval: %v %v, want the default", c.Reconcile.ResyncInterval, err)
	}
}

func TestParseLimits(t *testing.T) {
	t.Parallel()
	src := "sources: [{name: a, dir: {path: ./a}}]\n"
	c, err := Parse([]byte(src), "/etc/trueup", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits != (Limits{}) {
		t.Errorf("default limits %+v, want zero (the loader's defaults)", c.Limits)
	}
	c, err = Parse([]byte(src+"limits: {maxFiles: 10, maxDocuments: 20, maxResources: 30}\n"), "/etc/trueup", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Limits{MaxFiles: 10, MaxDocuments: 20, MaxResources: 30}); c.Limits != want {
		t.Errorf("limits %+v, want %+v", c.Limits, want)
	}
	for _, tt := range []struct{ src, want string }{
		{"limits: {maxFiles: -1}\n", "limits.maxFiles: -1 must not be negative"},
		{"limits: {maxFile: 10}\n", "maxFile"},
		{"server: {mcpOperatorTools: true}\n", "server.mcpOperatorTools: true needs server.mcp: true"},
	} {
		if _, err := Parse([]byte(src+tt.src), "/etc/trueup", env(nil)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.src, err, tt.want)
		}
	}
}

func TestParseNotificationRetention(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		src        string
		sent, dead time.Duration
		err        string
	}{
		{"log: {level: info}\n", DefaultOutboxSent, DefaultOutboxDead, ""},
		{"retention: {notifications: {sent: 24h}}\n", 24 * time.Hour, DefaultOutboxDead, ""},
		{"retention: {notifications: {sent: 1h, dead: 2160h}}\n", time.Hour, 2160 * time.Hour, ""},
		{"retention: {notifications: {dead: -1h}}\n", 0, 0, "retention.notifications.dead: -1h0m0s must not be negative"},
		{"retention: {notifications: {kept: 1h}}\n", 0, 0, "kept"},
	} {
		c, err := Parse([]byte(tt.src), "/etc/trueup", env(nil))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.src, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		if got := c.Retention.Notifications; got.Sent != tt.sent || got.Dead != tt.dead {
			t.Errorf("%q: %+v, want sent %s dead %s", tt.src, got, tt.sent, tt.dead)
		}
	}
}

// accepted is the want of a document Parse accepts in checkParse's tables.
const accepted = "(accepted)"

// checkParse parses each case's document, as parallel subtests: want is a substring of the
// error, accepted for a document accepted; an empty want fails (a case that forgot its
// error must not pass as accepted). Every error also contains fix ("": no more).
func checkParse(t *testing.T, cases []struct{ name, yaml, want string }, fix string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml), "/x", env(nil))
			switch {
			case tc.want == "":
				t.Fatalf("no want: the error expected, or accepted")
			case tc.want == accepted && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want == accepted:
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			case !strings.Contains(err.Error(), fix):
				t.Errorf("error %v does not say %q", err, fix)
			}
		})
	}
}
