package daemon

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRegistryDeclaresFiles: the github-actions kind declares its App's private key, the
// file its factory reads; a token config names none, nor do the kinds that read their files
// at each call.
func TestRegistryDeclaresFiles(t *testing.T) {
	t.Parallel()
	reg, err := Registry()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		kind, config string
		want         []string
	}{
		{"github-actions", `{"app": {"appID": 1, "installationID": "2", "privateKeyFile": "keys/app.pem"}, "owner": "o", "repo": "r"}`, []string{"keys/app.pem"}},
		{"github-actions", `{"token": "t", "owner": "o", "repo": "r"}`, nil},
		{"exec", `{"command": ["./deploy.sh"]}`, nil},
		{"terraform", `{"module": "./infra"}`, nil},
	}
	for _, tc := range cases {
		got, err := reg.Files(tc.kind, json.RawMessage(tc.config))
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: %q, %v, want %q", tc.kind, tc.config, got, err, tc.want)
		}
	}
	if _, err := reg.Files("github-actions", json.RawMessage(`{"app": {"keyFile": "x"}}`)); err == nil {
		t.Error("an undecodable github-actions config named files without an error")
	}
}
