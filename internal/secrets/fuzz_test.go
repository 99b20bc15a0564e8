package secrets

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
)

// FuzzResolve resolves arbitrary specs (they come from Git) against an env store exposing
// db-* only. It must not panic; an error is terminal unless it is the store's; a resolved
// spec is valid JSON without references and holds no value of a secret that is not exposed.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`,
		`{"pw":{"secretRef":{"name":"db-main","key":"password"}},"n":1.50}`,
		`{"x":[{"secretRef":{"name":"hidden","key":"password"}}]}`,
		`{"secretRef":{"name":"db-main","key":"password"}}`,
		`{"p":{"secretRef":{"name":"db-main","key":"password"},"x":1}}`,
		`{"p":{"secretRef":{"name":"../etc","key":"passwd"}}}`,
		`{"secretRef"`,
	} {
		f.Add(s)
	}
	env := map[string]string{"TRUEUP_SECRET_DB_MAIN__PASSWORD": "exposed-value", "TRUEUP_SECRET_HIDDEN__PASSWORD": "hidden-value"}
	r, err := New(config.Secrets{
		Stores: []config.SecretStore{{Name: "e", Type: "env", Prefix: "TRUEUP_SECRET_"}},
		Expose: []config.SecretExpose{{Store: "e", Names: []string{"db-*"}, Sources: []string{"*"}, Namespaces: []string{"*"}}},
	}, nil, WithLookupEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, _, err := r.Resolve(context.Background(), "s", "n", json.RawMessage(spec))
		if err != nil {
			if !actions.IsTerminal(err) {
				t.Fatalf("error %v is not terminal", err)
			}
			if strings.Contains(err.Error(), "hidden-value") || strings.Contains(err.Error(), "exposed-value") {
				t.Fatalf("error %q holds a value", err)
			}
			return
		}
		if strings.Contains(string(got), "hidden-value") {
			t.Fatalf("unexposed value in %s", got)
		}
		if HasRefs([]byte(spec)) && json.Valid([]byte(spec)) {
			if !json.Valid(got) {
				t.Fatalf("resolved spec %q is not JSON", got)
			}
			v, err := decodeSpec(got)
			if err != nil {
				t.Fatalf("resolved spec: %v", err)
			}
			if refs, err := FindRefs(v, "spec"); err != nil || len(refs) > 0 {
				t.Fatalf("resolved spec %s still has references %v %v", got, refs, err)
			}
		}
	})
}
