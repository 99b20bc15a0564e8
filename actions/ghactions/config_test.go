package ghactions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	s, err := parseConfig(json.RawMessage(`{"token":"ghp_abcdefghijklmnop","owner":"acme","repo":"infra"}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if s.ref != "main" || s.baseURL.String() != "https://api.github.com/" || s.pollInterval != 15*time.Second ||
		s.timeout != 30*time.Second || s.checkTimeout != 10*time.Minute || s.workflow != "" {
		t.Errorf("defaults = %+v", s)
	}
	s, err = parseConfig(json.RawMessage(`{"token":"ghp_abcdefghijklmnop","owner":"acme","repo":"infra",
		"baseURL":"https://ghe.example.com/api/v3"}`), "")
	if err != nil || s.baseURL.String() != "https://ghe.example.com/api/v3/" {
		t.Errorf("GHES baseURL = %v, %v; want a trailing slash added", s.baseURL, err)
	}
}

// TestAppIDs: app ids come as JSON numbers or, from ${VAR}, as strings of digits.
func TestAppIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.pem"), []byte("not parsed here"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, appID, installationID string // JSON values
		want                        string // error substring; "" for success
	}{
		{"numbers", `4242`, `777`, ""},
		{"strings", `"4242"`, `"777"`, ""},
		{"mixed", `4242`, `"777"`, ""},
		{"string with a newline", `"4242\n"`, `"777"`, ""},
		{"non-numeric appID", `"acme-app"`, `777`, "app.appID must be a positive integer"},
		{"non-numeric installationID", `4242`, `"${INSTALLATION_ID}"`, "app.installationID must be a positive integer"},
		{"negative", `4242`, `"-7"`, "app.installationID must be a positive integer"},
		{"zero", `0`, `777`, "app.appID must be a positive integer"},
		{"fraction", `4242.5`, `777`, "app.appID must be a positive integer"},
		{"too large", `4242`, `"99999999999999999999"`, "app.installationID must be a positive integer"},
		{"boolean", `true`, `777`, "app.appID must be a positive integer"},
		{"empty string", `""`, `777`, "app.appID is required"},
		{"null", `4242`, `null`, "app.installationID is required"},
	} {
		cfg := `{"app":{"appID":` + tc.appID + `,"installationID":` + tc.installationID + `,"privateKeyFile":"app.pem"},"owner":"a","repo":"b"}`
		s, err := parseConfig(json.RawMessage(cfg), dir)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want == "" && (s.app.appID != 4242 || s.app.installationID != 777):
			t.Errorf("%s: ids %d, %d; want 4242, 777", tc.name, s.app.appID, s.app.installationID)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestConfigInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const secret = "ghp_supersecretvalue123"
	garbage := "-----BEGIN RSA PRIVATE KEY-----\nTOPSECRETKEYMATERIALxxxxxxxxxxxx\n-----END RSA PRIVATE KEY-----\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.pem"), []byte(garbage), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cfg, want string
	}{
		{"unknown field", `{"token":"` + secret + `","owner":"a","repo":"b","tokn":"x"}`, `unknown field "tokn"`},
		{"unknown app field", `{"app":{"appID":1,"installationID":2,"privateKeyFile":"k","key":"x"},"owner":"a","repo":"b"}`, `unknown field "key"`},
		{"no credential", `{"owner":"a","repo":"b"}`, "token or app is required"},
		{"both credentials", `{"token":"` + secret + `","app":{"appID":1},"owner":"a","repo":"b"}`, "either token or app"},
		{"no owner", `{"token":"` + secret + `","repo":"b"}`, "owner"},
		{"bad repo", `{"token":"` + secret + `","owner":"a","repo":"b/c"}`, "repo"},
		{"bad baseURL", `{"token":"` + secret + `","owner":"a","repo":"b","baseURL":"ftp://x"}`, "baseURL"},
		{"baseURL credentials", `{"token":"` + secret + `","owner":"a","repo":"b","baseURL":"https://u:hunter2hunter2@x/"}`, "credentials"},
		{"pollInterval", `{"token":"` + secret + `","owner":"a","repo":"b","pollInterval":"-1s"}`, "pollInterval"},
		{"timeout", `{"token":"` + secret + `","owner":"a","repo":"b","timeout":"soon"}`, "timeout"},
		{"default workflow", `{"token":"` + secret + `","owner":"a","repo":"b","workflow":"../x.yml"}`, "workflow"},
		{"token type", `{"token":12345678901,"owner":"a","repo":"b"}`, "token"},
		{"app id", `{"app":{"installationID":2,"privateKeyFile":"k"},"owner":"a","repo":"b"}`, "appID"},
		{"key missing", `{"app":{"appID":1,"installationID":2,"privateKeyFile":"nope.pem"},"owner":"a","repo":"b"}`, "privateKeyFile"},
		{"allowedRefs pattern", `{"token":"` + secret + `","owner":"a","repo":"b","allowedRefs":["release/[a"]}`, `allowedRefs: "release/[a" is not a valid pattern`},
		{"allowedRefs empty entry", `{"token":"` + secret + `","owner":"a","repo":"b","allowedRefs":[""]}`, "allowedRefs: empty entry"},
		{"key garbage", `{"app":{"appID":1,"installationID":2,"privateKeyFile":"bad.pem"},"owner":"a","repo":"b"}`, "invalid PKCS#1"},
	} {
		_, err := New(json.RawMessage(tc.cfg), actions.Env{Name: "x", BaseDir: dir})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
			continue
		}
		for _, s := range []string{secret, "hunter2hunter2", "TOPSECRETKEYMATERIAL"} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q quotes a secret", tc.name, err)
			}
		}
	}
}

func TestValidateWith(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	withDefault, _ := newAction(t, f, f.config(nil), t.TempDir())
	noDefault, _ := newAction(t, f, f.config(map[string]any{"workflow": nil}), t.TempDir())
	restricted, _ := newAction(t, f, f.config(map[string]any{"allowedRefs": []string{"main", "release/*"}}), t.TempDir())
	locked, _ := newAction(t, f, f.config(map[string]any{"allowedRefs": []string{}}), t.TempDir())
	many := map[string]string{}
	for i := range 19 {
		many[string(rune('a'+i))] = "x"
	}
	manyJSON, _ := json.Marshal(map[string]any{"workflow": "deploy.yml", "inputs": many})
	for _, tc := range []struct {
		name string
		a    *Action
		with string
		want string // "" valid
	}{
		{"nil with a default workflow", withDefault, ``, ""},
		{"full", noDefault, `{"workflow":"deploy.yml","ref":"v1.2.3","inputs":{"env":"prod"},"deleteWorkflow":"delete.yml","checkWorkflow":"1234"}`, ""},
		{"numeric id", noDefault, `{"workflow":"987654"}`, ""},
		{"nil without a default workflow", noDefault, ``, "workflow is required"},
		{"unknown field", withDefault, `{"workflow":"deploy.yml","input":{}}`, `unknown field "input"`},
		{"reserved input", withDefault, `{"inputs":{"trueup_id":"x"}}`, `"trueup_id" is set by trueup`},
		{"too many inputs", withDefault, string(manyJSON), "at most 25"},
		{"path in workflow", withDefault, `{"workflow":".github/workflows/deploy.yml"}`, "neither a workflow file name"},
		{"no extension", withDefault, `{"deleteWorkflow":"delete"}`, "deleteWorkflow"},
		{"bad ref", withDefault, `{"ref":"main branch"}`, "ref"},
		{"inputs not strings", withDefault, `{"inputs":{"n":1}}`, "inputs"},
		{"allowed ref", restricted, `{"ref":"main"}`, ""},
		{"allowed ref glob", restricted, `{"ref":"release/2.0"}`, ""},
		{"config ref when with sets none", restricted, `{}`, ""},
		{"disallowed ref", restricted, `{"ref":"evil"}`, `with.ref: "evil" is not in the action's allowedRefs [main release/*]`},
		{"glob stops at a slash", restricted, `{"ref":"release/2.0/x"}`, "allowedRefs"},
		{"empty allowedRefs: only the config's ref", locked, `{"ref":"main"}`, `with.ref: "main" is not in the action's allowedRefs []`},
		{"empty allowedRefs, no with.ref", locked, `{}`, ""},
	} {
		err := tc.a.ValidateWith(json.RawMessage(tc.with))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// A bad with: reaching Reconcile anyway is terminal.
	_, err := withDefault.Reconcile(t.Context(), newResource("badwith", `{"inputs":{"spec":"x"}}`).request())
	if !actions.IsTerminal(err) {
		t.Errorf("Reconcile with a reserved input: err = %v, want terminal", err)
	}
}
