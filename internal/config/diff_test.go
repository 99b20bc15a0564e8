package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	// base is the config the cases change: two sources and two actions.
	const sources = `
sources:
  - name: a
    dir: {path: ./a}
  - name: b
    dir: {path: ./b}
`
	const actions = `actions:
  - name: run
    type: exec
    config: {command: [./run.sh]}
  - name: nop
    type: noop
`
	const base = sources + actions
	cases := []struct {
		name string
		new  string
		vars map[string]string
		want Changes
	}{
		{name: "same", new: base},
		{name: "same, reformatted and reordered", new: `
actions:
  - {name: nop, type: noop}
  - name: run
    type: exec
    config:
      command: [./run.sh]
sources:
  - {name: b, dir: {path: ./b}}
  - {name: a, dir: {path: ./a}}
`},
		{name: "source added, one removed, one changed", new: `
sources:
  - name: a
    dir: {path: ./a, interval: 5s}
  - name: c
    dir: {path: ./c}
` + actions, want: Changes{SourcesAdded: []string{"c"}, SourcesRemoved: []string{"b"}, SourcesChanged: []string{"a"}}},
		{name: "source webhook secret only", new: `
sources:
  - name: a
    dir: {path: ./a}
    webhook: {secret: s3cret-value}
  - name: b
    dir: {path: ./b}
    webhook: {secret: other-value}
    prune: false
` + actions, want: Changes{SourcesChanged: []string{"a", "b"}, WebhookOnly: []string{"a"}}},
		{name: "source prune turned off", new: `
sources:
  - name: a
    dir: {path: ./a}
    prune: false
  - name: b
    dir: {path: ./b}
` + actions, want: Changes{SourcesChanged: []string{"a"}}},
		{name: "action config, type, added, removed", new: sources + `actions:
  - name: run
    type: exec
    config: {command: [./run.sh, --fast]}
  - name: other
    type: noop
`, want: Changes{ActionsAdded: []string{"other"}, ActionsRemoved: []string{"nop"}, ActionsChanged: []string{"run"}}},
		// Parse-level only: serve reads its environment once, at start, so between two of its
		// loads a variable never changes (a rotated EnvironmentFile= needs a restart). This
		// pins that Diff compares values after expansion.
		{name: "action config differs after ${VAR} expansion (not reachable in serve)", vars: map[string]string{"CMD": "./other.sh"}, new: sources + `actions:
  - name: run
    type: exec
    config: {command: ["${CMD}"]}
  - name: nop
    type: noop
`, want: Changes{ActionsChanged: []string{"run"}}},
		{name: "restart-only blocks", new: base + `
server: {listen: "127.0.0.1:9999"}
reconcile: {workers: 3}
retention: {history: {maxPerResource: 5}}
log: {level: debug}
database: {url: "postgres://db/trueup"}
dataDir: /elsewhere
limits: {maxFiles: 10}
auth: {anonymous: viewer}
`, want: Changes{RestartRequired: []string{"database", "dataDir", "server", "reconcile", "retention", "log", "limits", "auth"}}},
		{name: "tracing is restart-only", new: base + `
tracing: {endpoint: "http://127.0.0.1:4318"}
`, want: Changes{RestartRequired: []string{"tracing"}}},
		{name: "notifications", new: base + `
notifications:
  providers:
    - {name: hook, type: webhook, url: "https://hooks.example.com/trueup"}
  rules:
    - {name: r, providers: [hook], events: [Stalled]}
`, want: Changes{Notifications: true}},
		{name: "policies and approvalTTL are read live", new: base + policiesExample, want: Changes{Policies: true}},
		{name: "approvalTTL", new: base + "approvalTTL: 1h\n", want: Changes{Policies: true}},
		{name: "an empty policies list", new: base + "policies: []\n"},
		{name: "windows are read live", new: base + windowsExample, want: Changes{Windows: true}},
		{name: "an empty windows list", new: base + "windows: []\n"},
	}
	old, err := Parse([]byte(base), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := Parse([]byte(tc.new), "/x", env(tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			got := Diff(old, n)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff:\n got %+v\nwant %+v", got, tc.want)
			}
			if got.None() != reflect.DeepEqual(tc.want, Changes{}) {
				t.Errorf("None() = %v", got.None())
			}
		})
	}
}

// KeepRestartOnly gives a config read again the running values of every restart-only block:
// what a reload builds from it uses none of the file's, and Diff against the running config
// no longer lists them (the reloader reports them from RestartOnlyChanged, taken before).
func TestKeepRestartOnly(t *testing.T) {
	t.Parallel()
	running, err := Parse([]byte("dataDir: /var/lib/trueup\nreconcile: {leaseTTL: 30s}\nsources:\n  - {name: a, dir: {path: ./a}}\n"), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	next, err := Parse([]byte(`dataDir: /elsewhere
reconcile: {leaseTTL: 90s, resyncInterval: 0s}
server: {externalURL: "https://trueup.example.com/"}
limits: {maxFiles: 10}
retention: {history: {maxPerResource: 5}}
auth: {anonymous: viewer}
sources:
  - {name: a, dir: {path: ./a, interval: 5s}}
`), "/x", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	pending := RestartOnlyChanged(running, next)
	if want := []string{"dataDir", "server", "reconcile", "retention", "limits", "auth"}; !reflect.DeepEqual(pending, want) {
		t.Errorf("RestartOnlyChanged = %v, want %v", pending, want)
	}
	KeepRestartOnly(next, running)
	if next.DataDir != "/var/lib/trueup" || next.Reconcile != running.Reconcile || next.Server.ExternalURL != running.Server.ExternalURL ||
		next.Limits != running.Limits || next.Auth != nil || next.resyncSet != running.resyncSet {
		t.Errorf("restart-only blocks not kept: %+v", next)
	}
	if got := Diff(running, next); !reflect.DeepEqual(got, Changes{SourcesChanged: []string{"a"}}) {
		t.Errorf("Diff after KeepRestartOnly = %+v, want only source a changed", got)
	}
}

// A key rotated in place (same path, new bytes) changes the source or action instance that
// reads it; a file that did not change does not, nor one an action's kind does not declare.
func TestDiffReferencedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"age.txt", "id_ed25519", "known_hosts", "app.pem", "gha.pem", "undeclared.pem"} {
		write(f, "v1 "+f)
	}
	cfgPath := filepath.Join(dir, "trueup.yaml")
	write("trueup.yaml", `
sources:
  - name: sealed
    dir: {path: .}
    decryption: {age: {keyFile: age.txt}}
  - name: ssh
    git: {url: "ssh://git@example.com/x.git", auth: {sshKeyFile: id_ed25519, knownHostsFile: known_hosts}}
  - name: app
    git: {url: "https://example.com/x.git", auth: {githubApp: {appID: 1, installationID: 2, privateKeyFile: app.pem}}}
  - name: plain
    dir: {path: .}
actions:
  - name: gha
    type: keyed
    config: {app: {key: gha.pem}}
  - name: nop
    type: noop
    config: {keyFile: undeclared.pem}
`)
	// The keyed kind declares app.key; noop declares nothing, whatever its keys' names.
	files := func(kind string, config json.RawMessage) ([]string, error) {
		if kind != "keyed" {
			return nil, nil
		}
		var c struct{ App struct{ Key string } }
		err := json.Unmarshal(config, &c)
		return []string{c.App.Key}, err
	}
	load := func() *Config {
		t.Helper()
		c, err := Load(cfgPath, env(nil))
		if err != nil {
			t.Fatal(err)
		}
		c.ReadFiles(files)
		return c
	}
	old := load()
	if got := Diff(old, load()); !got.None() {
		t.Fatalf("nothing rotated: %+v", got)
	}
	for _, f := range []string{"age.txt", "known_hosts", "app.pem", "gha.pem", "undeclared.pem"} {
		write(f, "v2 "+f)
	}
	want := Changes{SourcesChanged: []string{"app", "sealed", "ssh"}, ActionsChanged: []string{"gha"}}
	if got := Diff(old, load()); !reflect.DeepEqual(got, want) {
		t.Errorf("keys rotated:\n got %+v\nwant %+v", got, want)
	}
}
