package commitstatus

import (
	"strings"
	"testing"
)

// TestPlaintextCredentials: the token over an http:// baseURL to another machine is refused
// by Validate, naming baseURL and the fix, unless the config says Insecure; loopback needs
// no Insecure (internal/plaintext).
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		baseURL  string
		insecure bool
		want     string // error substring; "" for success
	}{
		{"http", "http://gitlab.example.com/", false, "commit status: baseURL: http:// would send the token unencrypted to gitlab.example.com"},
		{"http, insecure", "http://gitlab.example.com/", true, ""},
		{"http to loopback", "http://127.0.0.1:8929/", false, ""},
		{"https", "https://gitlab.example.com/", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Config{Provider: ProviderGitLab, Token: "glpat-123456", Repo: "g/p", BaseURL: tc.baseURL, Insecure: tc.insecure}.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			case !strings.Contains(err.Error(), "insecure: true"):
				t.Errorf("error %v does not say how to allow it", err)
			}
		})
	}
}
