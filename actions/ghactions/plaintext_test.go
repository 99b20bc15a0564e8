package ghactions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlaintextCredentials: a token or App over an http:// baseURL to another machine is
// refused at config time, naming baseURL and the fix, unless the config says insecure;
// loopback needs no insecure (internal/plaintext).
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.pem"), []byte("not parsed here"), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = `"token":"ghp_abcdefghijklmnop","owner":"acme","repo":"infra"`
	const app = `"app":{"appID":1,"installationID":2,"privateKeyFile":"app.pem"},"owner":"acme","repo":"infra"`
	tests := []struct {
		name, cfg string
		want      string // error substring; "" for success
	}{
		{"token over http", `{` + token + `,"baseURL":"http://ghe.example.com/api/v3/"}`,
			"config: baseURL: http:// would send the token unencrypted to ghe.example.com"},
		{"app over http", `{` + app + `,"baseURL":"http://ghe.example.com/api/v3/"}`,
			"config: baseURL: http:// would send the token unencrypted to ghe.example.com"},
		{"token over http, insecure", `{` + token + `,"baseURL":"http://ghe.example.com/api/v3/","insecure":true}`, ""},
		{"app over http, insecure", `{` + app + `,"baseURL":"http://ghe.example.com/api/v3/","insecure":true}`, ""},
		{"token over http to loopback", `{` + token + `,"baseURL":"http://[::1]:8080/"}`, ""},
		{"token over https", `{` + token + `,"baseURL":"https://ghe.example.com/api/v3/"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig(json.RawMessage(tc.cfg), dir)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			case !strings.Contains(err.Error(), "insecure: true") || strings.Contains(err.Error(), "ghp_"):
				t.Errorf("error %v does not say how to allow it, or quotes the token", err)
			}
		})
	}
}
