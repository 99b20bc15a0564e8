package storetest

import (
	"testing"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestOpenRegistersSources(t *testing.T) {
	t.Parallel()
	st := Open(t, store.Options{MaxConns: 2}, store.SourceConfig{Name: "infra", Branch: "main"}, store.SourceConfig{Name: "apps"})
	for _, name := range []string{"infra", "apps"} {
		if _, err := st.GetSource(t.Context(), name); err != nil {
			t.Errorf("GetSource(%q): %v", name, err)
		}
	}
}
