package githubapi

import (
	"strings"
	"testing"
)

// TestPlaintextCredentials: the token exchange over an http:// baseURL to another machine is
// refused by New, naming baseURL and the fix, unless the config says Insecure; loopback needs
// no Insecure (internal/plaintext).
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	key, _ := appKeys(t)
	path, _ := writeKey(t, t.TempDir(), key, false)
	tests := []struct {
		name     string
		baseURL  string
		insecure bool
		want     string // error substring; "" for success
	}{
		{"http", "http://ghe.example.com/api/v3/", false, "baseURL: http:// would send the App's signed token unencrypted to ghe.example.com"},
		{"http, insecure", "http://ghe.example.com/api/v3/", true, ""},
		{"http to loopback", "http://127.0.0.1:8080/", false, ""},
		{"https", "https://ghe.example.com/api/v3/", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewApp(AppConfig{AppID: testAppID, InstallationID: testInstallationID, PrivateKeyFile: path,
				BaseURL: tc.baseURL, Insecure: tc.insecure}, nil)
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
