package gitsource

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlaintextCredentials: credentials over http:// to another machine are refused at New,
// naming the url and the fix, unless the config says Insecure; loopback needs no Insecure.
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	const password = "s3cret-Passw0rd"
	token := func(context.Context) (string, error) { return "tok", nil }
	tests := []struct {
		name     string
		url      string
		auth     Auth
		insecure bool
		wantErr  bool
	}{
		{"password over http", "http://git.example.com/org/repo.git", Auth{Username: "bot", Password: password}, false, true},
		{"credentials in the url over http", "http://bot:" + password + "@git.example.com/org/repo.git", Auth{}, false, true},
		{"token in the url over http", "http://" + password + "@git.example.com/org/repo.git", Auth{}, false, true},
		{"github app over http", "http://git.example.com/org/repo.git", Auth{TokenFunc: token}, false, true},
		{"password over http, insecure", "http://git.example.com/org/repo.git", Auth{Username: "bot", Password: password}, true, false},
		{"github app over http, insecure", "http://git.example.com/org/repo.git", Auth{TokenFunc: token}, true, false},
		{"password over http to loopback", "http://127.0.0.1:8080/org/repo.git", Auth{Username: "bot", Password: password}, false, false},
		{"password over http to localhost", "http://localhost:8080/org/repo.git", Auth{Username: "bot", Password: password}, false, false},
		{"password over https", "https://git.example.com/org/repo.git", Auth{Username: "bot", Password: password}, false, false},
		{"no credentials over http", "http://git.example.com/org/repo.git", Auth{}, false, false},
		{"no credentials over git", "git://git.example.com/org/repo.git", Auth{}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(Config{Name: "infra", URL: tc.url, Auth: tc.auth, Insecure: tc.insecure, Dir: filepath.Join(t.TempDir(), "m")}, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("New(%s) = %v, want error %v", Redact(tc.url), err, tc.wantErr)
			}
			if err == nil {
				return
			}
			msg := err.Error()
			for _, want := range []string{`git source "infra": url: http://`, "git.example.com", "insecure: true", "https://"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if strings.Contains(msg, password) {
				t.Errorf("error %q quotes the password", msg)
			}
		})
	}
}
