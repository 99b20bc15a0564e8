package config

import (
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	t.Parallel()
	const base = `
sources:
  - name: a
    dir: {path: ./a}
  - name: b
    dir: {path: ./b}
actions:
  - name: run
    type: exec
    config: {command: [./run.sh]}
  - name: nop
    type: noop
`
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
actions:
  - name: run
    type: exec
    config: {command: [./run.sh]}
  - name: nop
    type: noop
`, want: Changes{SourcesAdded: []string{"c"}, SourcesRemoved: []string{"b"}, SourcesChanged: []string{"a"}}},
		{name: "source prune turned off", new: `
sources:
  - name: a
    dir: {path: ./a}
    prune: false
  - name: b
    dir: {path: ./b}
actions:
  - name: run
    type: exec
    config: {command: [./run.sh]}
  - name: nop
    type: noop
`, want: Changes{SourcesChanged: []string{"a"}}},
		{name: "action config, type, added, removed", new: `
sources:
  - name: a
    dir: {path: ./a}
  - name: b
    dir: {path: ./b}
actions:
  - name: run
    type: exec
    config: {command: [./run.sh, --fast]}
  - name: other
    type: noop
`, want: Changes{ActionsAdded: []string{"other"}, ActionsRemoved: []string{"nop"}, ActionsChanged: []string{"run"}}},
		{name: "action changed by the value of its variable", vars: map[string]string{"CMD": "./other.sh"}, new: `
sources:
  - name: a
    dir: {path: ./a}
  - name: b
    dir: {path: ./b}
actions:
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
`, want: Changes{RestartRequired: []string{"database", "dataDir", "server", "reconcile", "retention", "log"}}},
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
