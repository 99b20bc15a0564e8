package main

import (
	"bytes"
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// The reload's change is to one Network's spec, and to nothing else.
func TestChangeNetworkChangesOneSpec(t *testing.T) {
	files := fleetFiles(2, 3)
	opts := manifest.Options{}
	before, err := manifest.NewLoader().Load(files, opts)
	if err != nil {
		t.Fatal(err)
	}
	after, err := manifest.NewLoader().Load(changeNetwork(files), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Resources) != len(after.Resources) {
		t.Fatalf("%d resources, then %d", len(before.Resources), len(after.Resources))
	}
	var diff []string
	for i, r := range after.Resources {
		b := before.Resources[i]
		if r.Key() != b.Key() {
			t.Fatalf("resource %d: %v, then %v", i, b.Key(), r.Key())
		}
		if !bytes.Equal(r.Spec, b.Spec) {
			diff = append(diff, r.Kind+"/"+r.Name)
		}
	}
	if len(diff) != 1 || diff[0] != "Network/net-region-000" {
		t.Fatalf("specs changed: %v, want Network/net-region-000's alone", diff)
	}
}
