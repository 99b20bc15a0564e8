package cli

import (
	"testing"

	"github.com/trueup-dev/trueup/internal/wire"
)

// TestSourceErrorText: a source's error reads file:line (origin): path: message, as the loader
// spells it.
func TestSourceErrorText(t *testing.T) {
	for _, tt := range []struct {
		e    wire.SourceError
		want string
	}{
		{wire.SourceError{File: "sets/x.yaml", Line: 13, Path: "spec.size", Message: "must be an integer", Origin: "tenant=a, region=eu"},
			"sets/x.yaml:13 (tenant=a, region=eu): spec.size: must be an integer"},
		{wire.SourceError{File: "a.yaml", Line: 3, Message: "bad"}, "a.yaml:3: bad"},
		{wire.SourceError{Message: "no file"}, "no file"},
	} {
		if got := sourceErrorText(tt.e); got != tt.want {
			t.Errorf("sourceErrorText(%+v) = %q, want %q", tt.e, got, tt.want)
		}
	}
}
