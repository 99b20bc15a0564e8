package ocisource

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A config with only a credential store or helpers is warned about, not silently anonymous.
func TestAuthFromFileWarnsOfCredentialHelpers(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"credsStore":"desktop"}`, `{"credHelpers":{"ghcr.io":"gcloud"}}`} {
		var logs bytes.Buffer
		auth, err := authFromFile(writeConfig(t, body), "ghcr.io", slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil || auth != authn.Anonymous {
			t.Fatalf("%s: %v, %v", body, auth, err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "credsStore and credHelpers are not run") {
			t.Errorf("%s: logs %q", body, logs.String())
		}
	}
	var logs bytes.Buffer
	if _, err := authFromFile(writeConfig(t, `{"auths":{}}`), "ghcr.io", slog.New(slog.NewTextHandler(&logs, nil))); err != nil || logs.Len() != 0 {
		t.Errorf("a plain config: %v, logs %q", err, logs.String())
	}
}

// Two keys naming one registry: the one equal to it wins, else the first in sorted order,
// whatever the map's order.
func TestAuthFromFileDeterministic(t *testing.T) {
	t.Parallel()
	enc := func(u string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":pw")) }
	for _, tc := range []struct{ body, want string }{
		{`{"auths":{"https://ghcr.io/v1/":{"auth":"` + enc("a") + `"},"ghcr.io":{"auth":"` + enc("b") + `"},"http://ghcr.io":{"auth":"` + enc("c") + `"}}}`, "b"},
		{`{"auths":{"https://ghcr.io/v1/":{"auth":"` + enc("a") + `"},"http://ghcr.io":{"auth":"` + enc("c") + `"}}}`, "c"},
	} {
		file := writeConfig(t, tc.body)
		for range 20 {
			auth, err := authFromFile(file, "ghcr.io", slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := auth.Authorization()
			if err != nil || cfg.Username != tc.want {
				t.Fatalf("user %q, %v; want %q", cfg.Username, err, tc.want)
			}
		}
	}
}
