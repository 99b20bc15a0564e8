package auth

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func bearer(tok string) *http.Request {
	r := httptest.NewRequest("GET", "/api/v1/resources", nil)
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return r
}

func TestTokens(t *testing.T) {
	t.Parallel()
	ciTok, ciHash := NewToken()
	adminTok, adminHash := NewToken()
	if !strings.HasPrefix(ciTok, TokenPrefix) || len(ciTok) != len(TokenPrefix)+43 || ciTok == adminTok {
		t.Fatalf("token %q", ciTok)
	}
	a, err := New(&config.Auth{Anonymous: "viewer", Tokens: []config.Token{
		{Name: "ci-bot", SHA256: ciHash, Role: "operator", Namespaces: []string{"staging"}},
		{Name: "root", SHA256: adminHash, Role: "admin"},
	}}, "http://127.0.0.1:8080/", quiet())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header string
		want   Identity
		err    string
	}{
		{"operator token", "Bearer " + ciTok, Identity{Kind: "token", Name: "ci-bot", Role: Operator, Namespaces: []string{"staging"}}, ""},
		{"scheme is case-insensitive", "bearer " + adminTok, Identity{Kind: "token", Name: "root", Role: Admin, Namespaces: []string{"*"}}, ""},
		{"no credentials: anonymous", "", Identity{Kind: "anonymous", Name: "anonymous", Role: Viewer, Namespaces: []string{"*"}}, ""},
		{"bad token never falls back to anonymous", "Bearer " + ciTok + "x", Identity{}, "invalid bearer token"},
		{"the hash is not the token", "Bearer " + ciHash, Identity{}, "invalid bearer token"},
		{"empty token", "Bearer ", Identity{}, "invalid bearer token"},
		{"basic auth", "Basic dTpw", Identity{}, "unsupported Authorization scheme"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/resources", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			id, err := a.Authenticate(r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || id.Kind != tc.want.Kind || id.Name != tc.want.Name || id.Role != tc.want.Role || !slices.Equal(id.Namespaces, tc.want.Namespaces) {
				t.Fatalf("got %+v, %v; want %+v", id, err, tc.want)
			}
		})
	}
	// Without anonymous access, no credentials is an error.
	b, err := New(&config.Auth{Tokens: []config.Token{{Name: "ci-bot", SHA256: ciHash, Role: "viewer"}}}, "", quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(bearer("")); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("no credentials: %v", err)
	}
}

// TestTokenLine: the line `trueup token create` prints is accepted by the config and lets
// the token in with its role and namespaces.
func TestTokenLine(t *testing.T) {
	t.Parallel()
	tok, hash := NewToken()
	line := TokenLine("ci-bot", hash, Operator, []string{"staging", "*"})
	cfg, err := config.Parse([]byte("auth:\n  tokens:\n    "+line+"\n"), t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	a, err := New(cfg.Auth, cfg.Server.ExternalURL, quiet())
	if err != nil {
		t.Fatal(err)
	}
	id, err := a.Authenticate(bearer(tok))
	if err != nil || id.Name != "ci-bot" || id.Role != Operator || !slices.Equal(id.Namespaces, []string{"staging", "*"}) {
		t.Fatalf("%+v %v", id, err)
	}
}

func TestMapGroups(t *testing.T) {
	t.Parallel()
	m := []config.GroupRole{
		{Group: "platform-admins", Role: "admin"},
		{Group: "checkout", Role: "operator", Namespaces: []string{"production"}},
		{Group: "payments", Role: "operator", Namespaces: []string{"payments", "production"}},
		{Group: "everyone", Role: "viewer", Namespaces: []string{"*"}},
		{Group: "staging-admins", Role: "admin", Namespaces: []string{"staging"}},
	}
	tests := []struct {
		name   string
		groups []string
		role   Role
		ns     []string
	}{
		{"no group", []string{"other"}, "", nil},
		{"admin everywhere", []string{"platform-admins", "checkout"}, Admin, []string{"*"}},
		{"operator of one", []string{"checkout"}, Operator, []string{"production"}},
		{"operator namespaces unioned", []string{"checkout", "payments"}, Operator, []string{"production", "payments"}},
		{"a lower role adds nothing", []string{"checkout", "everyone"}, Operator, []string{"production"}},
		{"viewer", []string{"everyone"}, Viewer, []string{"*"}},
		{"a star swallows the rest", []string{"staging-admins", "platform-admins"}, Admin, []string{"*"}},
	}
	for _, tc := range tests {
		role, ns := MapGroups(m, tc.groups)
		if role != tc.role || !slices.Equal(ns, tc.ns) {
			t.Errorf("%s: got %s %v, want %s %v", tc.name, role, ns, tc.role, tc.ns)
		}
	}
}

func TestSealer(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	s := sealer{key: []byte("0123456789abcdef0123456789abcdef"), now: func() time.Time { return now }}
	in := session{Name: "ada", Groups: []string{"ops"}, ID: "x", Exp: now.Add(time.Hour).Unix()}
	v, err := s.seal("session", &in)
	if err != nil {
		t.Fatal(err)
	}
	var out session
	if err := s.open("session", v, &out); err != nil || out.Name != "ada" {
		t.Fatalf("open: %v %+v", err, out)
	}
	payload, sig, _ := strings.Cut(v, ".")
	forged := strings.Replace(payload, "A", "B", 1) + "." + sig
	other := sealer{key: []byte("another key, another replica set"), now: s.now}
	later := sealer{key: s.key, now: func() time.Time { return now.Add(2 * time.Hour) }}
	for name, check := range map[string]func() error{
		"tampered":       func() error { return s.open("session", forged, &session{}) },
		"other purpose":  func() error { return s.open("login", v, &loginState{}) },
		"other key":      func() error { return other.open("session", v, &session{}) },
		"expired":        func() error { return later.open("session", v, &session{}) },
		"no signature":   func() error { return s.open("session", payload, &session{}) },
		"garbage":        func() error { return s.open("session", "a.b", &session{}) },
		"truncated sig":  func() error { return s.open("session", v[:len(v)-2], &session{}) },
		"empty":          func() error { return s.open("session", "", &session{}) },
		"swapped halves": func() error { return s.open("session", sig+"."+payload, &session{}) },
	} {
		if err := check(); err == nil {
			t.Errorf("%s cookie accepted", name)
		}
	}
}

func TestLocalPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"/resources?phase=Failed", "/resources?phase=Failed"},
		{"/resources/staging/Db/orders#events", "/resources/staging/Db/orders#events"},
		{"/a%2Fb", "/a%2Fb"}, // an escaped slash inside a path stays on this server
		{"", "/"},
		{"resources", "/"},
		{"//evil.example.com/", "/"},
		{"///evil.example", "/"},
		{"/\\evil.example.com", "/"},
		{"\\/evil.example", "/"},
		{"/x\\y", "/"},
		{"/%2F/evil.example", "/"}, // decoded, the path is //evil.example
		{"/%2f/evil.example", "/"},
		{"https://evil.example/", "/"},
		{"https:evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"/\t/evil.example", "/"}, // the reproduction: next=/%09/evil.example
		{"/\n/evil.example", "/"},
		{"/\r/evil.example", "/"},
		{"\t//evil.example", "/"},
		{"/resources\t", "/"},
		{"/a\r\nSet-Cookie: x", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x7f/evil.example", "/"},
		{"/\u0085/evil.example", "/"}, // C1 control
		{"/%zz", "/"},                 // does not parse
	} {
		if got := localPath(c.in); got != c.want {
			t.Errorf("localPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
