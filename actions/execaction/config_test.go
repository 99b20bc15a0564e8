package execaction

import (
	"slices"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		5 * time.Minute:                  "5m",
		time.Hour:                        "1h",
		90 * time.Minute:                 "1h30m",
		90 * time.Second:                 "1m30s",
		300 * time.Millisecond:           "300ms",
		2*time.Hour + 5*time.Second:      "2h0m5s",
		10 * time.Second:                 "10s",
		time.Hour + 500*time.Millisecond: "1h0m0.5s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q; want %q", d, got, want)
		}
	}
}

func TestSecretName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"API_TOKEN": true, "github_token": true, "CLIENT_SECRET": true, "DB_PASSWORD": true, "PGPASSWD": true,
		"PGPASS": true, "SSH_KEY": true, "apiKey": true, "AWS_CREDENTIALS": true, "BASIC_AUTH": true,
		"TLS_CERT": true, "PRIVATE_REPO_URL": true,
		"DEMO_DIR": false, "REGION": false, "REPLY_JSON": false, "OUT_DIR": false, "HOME": false, "TIER": false,
	} {
		if got := actions.SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestOnlySecretNamesRedacted(t *testing.T) {
	t.Parallel()
	s, err := parseConfig([]byte(`{"command": ["true"], "env": {"DEMO_DIR": "../.trueup/demo", "REGION": "eu-west-1",
		"API_TOKEN": "tok-123456", "db_password": "a-longer-password", "SSH_KEY": "abc", "OTHER_TOKEN": "tok-123456"}}`), ".")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a-longer-password", "tok-123456"} // longest first, once each, none short
	if !slices.Equal(s.secrets, want) {
		t.Errorf("secrets %q; want %q", s.secrets, want)
	}
	if len(s.env) != 6 {
		t.Errorf("env %q; want all six variables", s.env)
	}
}
