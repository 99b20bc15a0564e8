package gitlab

import (
	"encoding/json"
	"testing"

	"github.com/trueup-dev/trueup/actions/actiontest"
)

// TestPlaintextCredentials: the tokens over an http:// baseURL to another machine are
// refused at config time, naming baseURL and the fix, unless the config says insecure;
// loopback needs no insecure (internal/plaintext).
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	const rest = `"project":"infra/db","triggerToken":"glptt-trigger-1234","token":"glpat-api-123456"`
	parse := func(raw json.RawMessage) error { _, err := parseConfig(raw); return err }
	actiontest.Plaintext(t, parse, []string{"glp"}, []struct{ Name, Config, Want string }{
		{"tokens over http", `{"baseURL":"http://gitlab.example.com/",` + rest + `}`,
			"config: baseURL: http:// would send the tokens unencrypted to gitlab.example.com"},
		{"tokens over http, insecure", `{"baseURL":"http://gitlab.example.com/","insecure":true,` + rest + `}`, ""},
		{"tokens over http to localhost", `{"baseURL":"http://localhost:8929/",` + rest + `}`, ""},
		{"tokens over https", `{"baseURL":"https://gitlab.example.com/",` + rest + `}`, ""},
	})
}
