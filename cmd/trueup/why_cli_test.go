package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/wire"
)

func TestWhyCLI(t *testing.T) {
	t.Parallel()
	a := setup(t)
	out, stderr, err := a.run(t, "why", "databasecluster/catalog-mysql", "-n", "production")
	if err != nil {
		t.Fatalf("why: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"DatabaseCluster/catalog-mysql in namespace production: Failed\nBlocked by:\n  1. Stalled: mysql 8.0 is not offered in eu-west-1: choose 8.4",
		"\nTimeline:\n",
		"  commit  Created at ",
		"  event  ActionRejected: mysql 8.0 is not offered in eu-west-1: choose 8.4\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("why does not say %q:\n%s", want, out)
		}
	}
	out, _, err = a.run(t, "why", "Bucket/invoices", "-n", "production", "-o", "json")
	var tl wire.Timeline
	if err != nil || json.Unmarshal([]byte(out), &tl) != nil || tl.Resource.Kind != "Bucket" || len(tl.Blocking) != 0 || len(tl.Entries) == 0 {
		t.Errorf("why -o json: err %v\n%s", err, out)
	}
	if _, _, err := a.run(t, "why", "Bucket/nope", "-n", "production"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("why of a missing resource: %v", err)
	}
}
