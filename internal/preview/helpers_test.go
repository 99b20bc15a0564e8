package preview

import (
	"context"
	"testing"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// openStore is a store on a database of its own, with srcs registered.
func openStore(t *testing.T, srcs ...store.SourceConfig) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	for _, s := range srcs {
		if err := st.RegisterSource(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return st
}
