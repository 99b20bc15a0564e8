package ghactions

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestScrub(t *testing.T) {
	t.Parallel()
	s := &secrets{}
	s.addFixed("ghp_staticsecret1234")
	s.addKey("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAxyzxyzxyzxyzxyz\nshort\n-----END RSA PRIVATE KEY-----\n")
	for i := range maxRememberedSecrets + 2 {
		s.addRecent("ghs_installation" + strings.Repeat("x", i))
	}
	text := "a ghp_staticsecret1234 b MIIEowIBAAKCAQEAxyzxyzxyzxyzxyz c ghs_installation" + strings.Repeat("x", maxRememberedSecrets+1) + " d short"
	got := s.scrub(text)
	if strings.Contains(got, "ghp_") || strings.Contains(got, "MIIE") || strings.Contains(got, "ghs_") {
		t.Errorf("scrub = %q", got)
	}
	if !strings.Contains(got, " d short") {
		t.Errorf("scrub removed a short line that is no secret: %q", got)
	}

	err := s.scrubErr(errors.New("401 for ghp_staticsecret1234"))
	if strings.Contains(err.Error(), "ghp_") {
		t.Errorf("scrubErr = %q", err)
	}
	if plain := errors.New("nothing secret"); s.scrubErr(plain) != plain {
		t.Error("scrubErr wrapped an error without secrets")
	}

	logs := &logBuffer{}
	logger := slog.New(&scrubHandler{next: slog.NewJSONHandler(logs, nil), secrets: s}).With("token", "ghp_staticsecret1234")
	logger.WithGroup("g").Info("msg ghp_staticsecret1234", "err", errors.New("ghp_staticsecret1234"),
		slog.Group("nested", "v", "ghp_staticsecret1234"), "n", 3)
	if out := logs.String(); strings.Contains(out, "ghp_") || !strings.Contains(out, redacted) || !strings.Contains(out, `"n":3`) {
		t.Errorf("log = %s", out)
	}
}
