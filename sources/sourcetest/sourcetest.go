// Package sourcetest owns the table test every source kind runs on its config block: each case
// is the block as users write it and what the kind must make of it (defaults, the errors that
// name a field, Info, Files).
package sourcetest

import (
	"bytes"
	"path"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/sources"
)

// Folder is the config file's folder that the cases' relative paths resolve against.
const Folder = "/cfg"

// Case is one block of a kind and what its spec must say of it.
type Case struct {
	Name string
	// Text is the block as written under the kind's key.
	Text string
	// Err is a part of the error decoding or validating it gives ("": none); the block is
	// validated as sources[0].<kind>.
	Err   string
	Info  sources.Info
	Files []string
}

// Decode decodes text strictly into spec (a new value of the kind's Spec type), as the config
// loader does, fills its defaults with relative paths resolved against Folder and validates
// it.
func Decode(spec sources.Spec, text string) error {
	dec := yaml.NewDecoder(bytes.NewReader([]byte(text)))
	dec.KnownFields(true)
	if err := dec.Decode(spec); err != nil {
		return err
	}
	spec.Defaults(func(p string) string {
		if p == "" || path.IsAbs(p) {
			return p
		}
		return path.Join(Folder, p)
	})
	return spec.Validate("sources[0]." + spec.Kind())
}

// Run runs the cases on fresh specs of newSpec.
func Run(t *testing.T, newSpec func() sources.Spec, cases []Case) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			spec := newSpec()
			err := Decode(spec, tc.Text)
			switch {
			case tc.Err != "" && (err == nil || !strings.Contains(err.Error(), tc.Err)):
				t.Fatalf("error %v, want %q", err, tc.Err)
			case tc.Err != "":
				return
			case err != nil:
				t.Fatal(err)
			}
			if got := spec.Info(); got != tc.Info {
				t.Errorf("info %+v, want %+v", got, tc.Info)
			}
			if got := spec.Files(); !reflect.DeepEqual(got, tc.Files) {
				t.Errorf("files %q, want %q", got, tc.Files)
			}
		})
	}
}
