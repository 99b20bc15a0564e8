package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/logbuf"
)

// TestRegistryDeclaresFiles: the github-actions kind declares its App's private key, the
// file its factory reads; a token config names none, nor do the kinds that read their files
// at each call.
func TestRegistryDeclaresFiles(t *testing.T) {
	t.Parallel()
	reg, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		kind, config string
		want         []string
	}{
		{"github-actions", `{"app": {"appID": 1, "installationID": "2", "privateKeyFile": "keys/app.pem"}, "owner": "o", "repo": "r"}`, []string{"keys/app.pem"}},
		{"github-actions", `{"token": "t", "owner": "o", "repo": "r"}`, nil},
		{"exec", `{"command": ["./deploy.sh"]}`, nil},
		{"terraform", `{"module": "./infra"}`, nil},
	}
	for _, tc := range cases {
		got, err := reg.Files(tc.kind, json.RawMessage(tc.config))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: %q, %v, want %q", tc.kind, tc.config, got, err, tc.want)
		}
	}
	if _, err := reg.Files("github-actions", json.RawMessage(`{"app": {"keyFile": "x"}}`)); err == nil {
		t.Error("an undecodable github-actions config named files without an error")
	}
}

// TestReloadRotatedDeclaredFile: a reload changes the action instance whose declared file
// holds new bytes, and no other; a file named under a key ending in "File" that its kind does
// not declare changes nothing.
func TestReloadRotatedDeclaredFile(t *testing.T) {
	e := newDaemonEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("k.pem", "v1")
	write("other.pem", "v1")
	reg, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"keyed", "loose"} {
		if err := reg.Register(kind, func(_ json.RawMessage, env actions.Env) (actions.Action, error) {
			return noop.New(nil, env)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.RegisterFiles("keyed", func(config json.RawMessage) ([]string, error) {
		var c struct{ Key string }
		err := json.Unmarshal(config, &c)
		return []string{c.Key}, err
	}); err != nil {
		t.Fatal(err)
	}
	load := func() *config.Config {
		t.Helper()
		cfg, err := config.Parse([]byte(fmt.Sprintf("dataDir: %s\ndatabase: {url: %q}\nserver: {listen: %q}\n"+
			"actions:\n  - {name: keyed, type: keyed, config: {key: k.pem}}\n  - {name: loose, type: loose, config: {keyFile: other.pem}}\n"+
			"reconcile: {workers: 1, leaseTTL: 5s}\n", filepath.Join(e.dir, "data"), e.dbURL, e.listen)), e.dir, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	var logs logbuf.Buffer
	d, err := New(load(), Deps{Stderr: &logs, Version: "test", Replica: "r1", Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatalf("start: %v\n%s", err, logs.String())
	}
	defer d.Stop()
	if res := d.Reload(load()); !res.OK || len(res.ActionsChanged) != 0 {
		t.Fatalf("nothing rotated: %+v\n%s", res, logs.String())
	}
	write("k.pem", "v2")
	write("other.pem", "v2")
	if res := d.Reload(load()); !res.OK || !slices.Equal(res.ActionsChanged, []string{"keyed"}) {
		t.Fatalf("rotated: %+v\n%s", res, logs.String())
	}
}
