package plaintext

import (
	"strings"
	"testing"
)

// TestCheck names every combination of scheme, credential, insecure and loopback that the
// rule distinguishes.
func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		scheme, host  string
		hasCredential bool
		insecure      bool
		wantErr       bool
	}{
		{"https with credential", "https", "git.example.com", true, false, false},
		{"ssh with credential", "ssh", "git.example.com", true, false, false},
		{"http without credential", "http", "git.example.com", false, false, false},
		{"git without credential", "git", "git.example.com", false, false, false},
		{"http with credential", "http", "git.example.com", true, false, true},
		{"HTTP upper case with credential", "HTTP", "git.example.com", true, false, true},
		{"git with credential", "git", "git.example.com", true, false, true},
		{"http with credential to a private address", "http", "10.0.0.5", true, false, true},
		{"http with credential to an ipv6 address", "http", "2001:db8::1", true, false, true},
		{"http with credential and insecure", "http", "git.example.com", true, true, false},
		{"git with credential and insecure", "git", "git.example.com", true, true, false},
		{"http with credential to localhost", "http", "localhost", true, false, false},
		{"http with credential to LOCALHOST.", "http", "LOCALHOST.", true, false, false},
		{"http with credential to 127.0.0.1", "http", "127.0.0.1", true, false, false},
		{"http with credential to 127.1.2.3", "http", "127.1.2.3", true, false, false},
		{"http with credential to ::1", "http", "::1", true, false, false},
		{"http with credential to a name ending in localhost", "http", "localhost.example.com", true, false, true},
		{"http with credential to 0.0.0.0", "http", "0.0.0.0", true, false, true},
		{"http with credential to an empty host", "http", "", true, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Check("baseURL", tc.scheme, tc.host, "the token", tc.hasCredential, tc.insecure)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Check(%q, %q, credential=%v, insecure=%v) = %v, want error %v",
					tc.scheme, tc.host, tc.hasCredential, tc.insecure, err, tc.wantErr)
			}
			if err == nil {
				return
			}
			for _, want := range []string{"baseURL: ", "the token", "insecure: true", "https://"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
