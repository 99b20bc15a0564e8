package gitlab

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPlaintextCredentials: the tokens over an http:// baseURL to another machine are
// refused at config time, naming baseURL and the fix, unless the config says insecure;
// loopback needs no insecure (internal/plaintext).
func TestPlaintextCredentials(t *testing.T) {
	t.Parallel()
	const rest = `"project":"infra/db","triggerToken":"glptt-trigger-1234","token":"glpat-api-123456"`
	tests := []struct {
		name, cfg string
		want      string // error substring; "" for success
	}{
		{"tokens over http", `{"baseURL":"http://gitlab.example.com/",` + rest + `}`,
			"config: baseURL: http:// would send the tokens unencrypted to gitlab.example.com"},
		{"tokens over http, insecure", `{"baseURL":"http://gitlab.example.com/","insecure":true,` + rest + `}`, ""},
		{"tokens over http to localhost", `{"baseURL":"http://localhost:8929/",` + rest + `}`, ""},
		{"tokens over https", `{"baseURL":"https://gitlab.example.com/",` + rest + `}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseConfig(json.RawMessage(tc.cfg))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			case !strings.Contains(err.Error(), "insecure: true") || strings.Contains(err.Error(), "glp"):
				t.Errorf("error %v does not say how to allow it, or quotes a token", err)
			}
		})
	}
}
