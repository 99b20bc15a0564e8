package manifest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/trueup-dev/trueup/sources"
)

// ReadDirAll (what validate and diff hand a render) skips a folder source's clock probe, as
// the sources do, so a serve watching the same folder changes nothing it reads.
func TestReadDirAllSkipsClockProbe(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"kustomization.yaml":               "resources: [a.yaml]\n",
		"a.yaml":                           "kind: X\n",
		".env":                             "K=v\n",
		sources.ClockProbePrefix + "12345": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	files, err := ReadDirAll(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	want := []string{".env", "a.yaml", "kustomization.yaml"}
	if len(got) != len(want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("files %v, want %v", got, want)
		}
	}
}
