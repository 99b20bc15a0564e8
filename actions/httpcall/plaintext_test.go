package httpcall

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlaintextCredentials: headers, a signing secret or URL credentials over http:// to
// another machine are refused at config time, naming the url and the fix, unless the
// config says insecure; loopback needs no insecure (internal/plaintext).
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	const token = "Bearer prov-token-123456"
	tests := []struct {
		name, cfg string
		want      string // error substring; "" for success
	}{
		{"headers over http", `{"url":"http://prov.example.com/jobs","headers":{"Authorization":"` + token + `"}}`,
			"config: url: http:// would send the headers unencrypted to prov.example.com"},
		{"signing secret over http", `{"url":"http://prov.example.com/jobs","signingSecret":"sign-secret-123"}`,
			"config: url: http:// would send the signed requests unencrypted"},
		{"url credentials over http", `{"url":"http://bot:pass-word-1@prov.example.com/jobs"}`,
			"config: url: http:// would send the credentials in the url unencrypted"},
		{"headers over http, insecure", `{"url":"http://prov.example.com/jobs","headers":{"Authorization":"` + token + `"},"insecure":true}`, ""},
		{"signing secret over http, insecure", `{"url":"http://prov.example.com/jobs","signingSecret":"sign-secret-123","insecure":true}`, ""},
		{"headers over http to loopback", `{"url":"http://127.0.0.1:9000/jobs","headers":{"Authorization":"` + token + `"}}`, ""},
		{"headers over https", `{"url":"https://prov.example.com/jobs","headers":{"Authorization":"` + token + `"}}`, ""},
		{"nothing secret over http", `{"url":"http://prov.example.com/jobs"}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig(json.RawMessage(tc.cfg))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want == "":
				return
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			case !strings.Contains(err.Error(), "insecure: true"):
				t.Errorf("error %v does not say how to allow it", err)
			}
			for _, secret := range []string{"prov-token-123456", "sign-secret-123", "pass-word-1"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %v quotes a secret", err)
				}
			}
		})
	}
}
