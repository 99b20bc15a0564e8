package ghactions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/trueup-dev/trueup/actions/actiontest"
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
	parse := func(raw json.RawMessage) error { _, err := parseConfig(raw, dir); return err }
	actiontest.Plaintext(t, parse, []string{"ghp_"}, []struct{ Name, Config, Want string }{
		{"token over http", `{` + token + `,"baseURL":"http://ghe.example.com/api/v3/"}`,
			"config: baseURL: http:// would send the token unencrypted to ghe.example.com"},
		{"app over http", `{` + app + `,"baseURL":"http://ghe.example.com/api/v3/"}`,
			"config: baseURL: http:// would send the token unencrypted to ghe.example.com"},
		{"token over http, insecure", `{` + token + `,"baseURL":"http://ghe.example.com/api/v3/","insecure":true}`, ""},
		{"app over http, insecure", `{` + app + `,"baseURL":"http://ghe.example.com/api/v3/","insecure":true}`, ""},
		{"token over http to loopback", `{` + token + `,"baseURL":"http://[::1]:8080/"}`, ""},
		{"token over https", `{` + token + `,"baseURL":"https://ghe.example.com/api/v3/"}`, ""},
	})
}
