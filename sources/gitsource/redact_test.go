package gitsource

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://github.com/acme/infra.git", "https://github.com/acme/infra.git"},
		{"https://bot:s3cret@github.com/acme/infra.git", "https://bot@github.com/acme/infra.git"},
		{"https://x-access-token:ghp_abc@github.com/acme/infra.git", "https://x-access-token@github.com/acme/infra.git"},
		{"http://user:p%40ss@127.0.0.1:8080/x.git", "http://user@127.0.0.1:8080/x.git"},
		{"https://user:@host/x.git", "https://user@host/x.git"},
		// A token in the user position.
		{"https://ghp_token123@github.com/acme/infra.git", "https://redacted@github.com/acme/infra.git"},
		{"ssh://git@github.com/acme/infra.git", "ssh://git@github.com/acme/infra.git"},
		{"ssh://git:pw@github.com:2222/acme/infra.git", "ssh://git@github.com:2222/acme/infra.git"},
		{"git@github.com:acme/infra.git", "git@github.com:acme/infra.git"},
		{"/srv/git/infra", "/srv/git/infra"},
		{"file:///srv/git/infra", "file:///srv/git/infra"},
		// Malformed URLs: the password holds characters that break parsing.
		{"https://user:pa/ss@host/x.git", "https://user@host/x.git"},
		{"https://user:pa#ss@host/x.git", "https://user@host/x.git"},
		{"https://user:pa ss@host/x.git", "https://user@host/x.git"},
		{"https://tok#en@host/x.git", "https://redacted@host/x.git"},
		{"https://user:pa?ss@host/x.git", "https://user@host/x.git"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestScrubbedErrorKeepsChain(t *testing.T) {
	t.Parallel()
	err := scrubber{"", "hunter22"}.wrap(fmt.Errorf("dial https://u:hunter22@h: %w", fs.ErrNotExist))
	if got, want := err.Error(), "dial https://u:***@h: file does not exist"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("scrubbed error lost its chain")
	}
}

func TestRedactQuery(t *testing.T) {
	t.Parallel()
	got := Redact("https://gitlab.example.com/infra.git?private_token=glpat-secret123")
	if strings.Contains(got, "glpat-secret123") || !strings.Contains(got, "private_token=redacted") {
		t.Errorf("Redact kept the query token: %s", got)
	}
}
