package store

import (
	"context"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

func TestJITChosen(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		chosen bool
	}{
		{nil, false},
		{map[string]string{"application_name": "trueup"}, false},
		{map[string]string{"jit": "on"}, true},
		{map[string]string{"jit": "off"}, true},
		{map[string]string{"options": "-c jit=on"}, true},
		{map[string]string{"options": "-c statement_timeout=5s"}, false},
		{map[string]string{"options": "-c statement_timeout=5s -cjit=off"}, true},
		{map[string]string{"options": "--jit=on"}, true},
		{map[string]string{"options": "-c jit_above_cost=10"}, false},
	} {
		if got := jitChosen(c.params); got != c.chosen {
			t.Errorf("jitChosen(%v) = %v, want %v", c.params, got, c.chosen)
		}
	}
}

// The pools' sessions run with JIT off unless the URL chooses otherwise, or a session URL
// says the url goes through a pooler (where a SET would stay on a shared server session).
func TestSessionsRunWithoutJIT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t, MigrateURL)
	jit := func(st *Store) (pool, leases string) {
		t.Helper()
		if err := st.pool.QueryRow(ctx, "SHOW jit").Scan(&pool); err != nil {
			t.Fatal(err)
		}
		if err := st.leases.QueryRow(ctx, "SHOW jit").Scan(&leases); err != nil {
			t.Fatal(err)
		}
		return pool, leases
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, c := range []struct {
		name string
		url  string
		opts Options
		want string
	}{
		{"default", url, Options{}, "off"},
		{"chosen in the url", url + sep + "jit=on", Options{}, "on"},
		{"through a pooler", url, Options{SessionURL: url}, "on"},
	} {
		st, err := Open(ctx, c.url, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if pool, leases := jit(st); pool != c.want || leases != c.want {
			t.Errorf("%s: jit %s (pool), %s (leases), want %s", c.name, pool, leases, c.want)
		}
		st.Close()
	}
}
