package httpcall

import (
	"encoding/json"
	"testing"

	"github.com/trueup-dev/trueup/actions/actiontest"
)

// TestPlaintextCredentials: headers, a signing secret or URL credentials over http:// to
// another machine are refused at config time, naming the url and the fix, unless the
// config says insecure; loopback needs no insecure (internal/plaintext).
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	const token = "Bearer prov-token-123456"
	parse := func(raw json.RawMessage) error { _, err := parseConfig(raw); return err }
	actiontest.Plaintext(t, parse, []string{"prov-token-123456", "sign-secret-123", "pass-word-1"}, []struct{ Name, Config, Want string }{
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
	})
}
