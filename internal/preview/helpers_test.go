package preview

import (
	"testing"

	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/store/storetest"
)

// openStore is a store on a database of its own, with srcs registered.
func openStore(t *testing.T, srcs ...store.SourceConfig) *store.Store {
	t.Helper()
	return storetest.Open(t, store.Options{MaxConns: 4}, srcs...)
}
