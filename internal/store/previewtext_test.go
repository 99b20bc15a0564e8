package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// A title or URL PostgreSQL's text refuses (cut inside a rune, NUL bytes) is stored cleaned.
func TestSavePreviewUnstorableText(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t, store.MigrateURL), store.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "infra"}); err != nil {
		t.Fatal(err)
	}
	title := (strings.Repeat("a", 255) + "é")[:256] + "…"
	p, err := st.SavePreview(ctx, store.Preview{Source: "infra", Number: 7, Provider: "github", Title: title + "\x00", URL: "https://x/\x00",
		HeadSHA: strings.Repeat("ab", 20), State: store.PreviewRunning})
	if err != nil {
		t.Fatalf("SavePreview of a title cut inside a rune: %v", err)
	}
	if p.Title != strings.Repeat("a", 255)+"\uFFFD…" || p.URL != "https://x/" {
		t.Errorf("stored title %q, url %q", p.Title, p.URL)
	}
}
