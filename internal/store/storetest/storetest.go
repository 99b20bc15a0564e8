// Package storetest opens stores for the tests of the packages that use one: a store on a
// fresh migrated database of its own, with sources registered.
package storetest

import (
	"context"
	"testing"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// Open opens a store with opts on a database of its own (pgtest.NewDatabase; the test
// binary's TestMain runs pgtest.Main), registers srcs in it, and closes it when the test
// ends.
func Open(t testing.TB, opts store.Options, srcs ...store.SourceConfig) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	for _, src := range srcs {
		if err := st.RegisterSource(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	return st
}
