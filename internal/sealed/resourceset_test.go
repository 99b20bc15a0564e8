package sealed_test

import (
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/sources"
)

// An encrypted ResourceSet, or inputs file, is not supported: its values would be copied
// into generated resources that no encrypted document stands for. It fails closed.
func TestResourceSetEncryptedFailsClosed(t *testing.T) {
	t.Parallel()
	id, rcpt := sealedtest.Key()
	const set = `apiVersion: trueup.dev/v1
kind: ResourceSet
metadata: {name: dbs}
spec:
  inputsFrom: [{path: secrets.yaml}]
  inputs: [{name: orders, password: s3cr3t-Passw0rd}]
  resources:
    - apiVersion: example.com/v1
      kind: Database
      metadata: {name: "<< inputs.name >>"}
      spec: {password: "<< inputs.password >>"}
`
	const inputs = "name: billing\npassword: another-Secret-9\n"
	for _, tc := range []struct {
		name       string
		set, input []byte
		want       string
	}{
		{"set file", encrypt(t, "set.yaml", set, "^inputs$", rcpt), []byte(""), "encrypted values of resourceset/default/dbs belong to no resource of the revision"},
		{"inputs file", []byte(strings.Replace(set, "  inputs: [{name: orders, password: s3cr3t-Passw0rd}]\n", "", 1)), encrypt(t, "secrets.yaml", inputs, "^password$", rcpt),
			"secrets.yaml:2: password: only values under spec may be encrypted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := sealed.NewOpener(keys(t, id))
			set, _, err := load(t, op, sources.File{Path: "types.yaml", Data: []byte(typeDoc)},
				sources.File{Path: "set.yaml", Data: tc.set}, sources.File{Path: "secrets.yaml", Data: tc.input})
			if err == nil {
				t.Fatalf("loaded %d resources", len(set.Resources))
			}
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "another-Secret") {
				t.Fatalf("plaintext in the error: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}
