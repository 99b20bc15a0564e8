package daemon

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/execaction"
	"github.com/trueup-dev/trueup/actions/terraform"
	"github.com/trueup-dev/trueup/internal/config"
)

// Previews cut the controller's folders from what plans publish: the config's folder, the
// data folder and the folders the actions keep files in.
func TestPreviewRoots(t *testing.T) {
	t.Parallel()
	base, work, locks := t.TempDir(), t.TempDir(), t.TempDir()
	tf, err := terraform.New(json.RawMessage(`{"module": "m", "workDir": "`+work+`"}`), actions.Env{Name: "tf", BaseDir: base})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := execaction.New(json.RawMessage(`{"command": ["true"], "lockDir": "`+locks+`"}`), actions.Env{Name: "ex", BaseDir: base})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{BaseDir: base, DataDir: filepath.Join(base, ".trueup")}
	roots := previewRoots(cfg, map[string]actions.Action{"tf": tf, "ex": ex})
	for _, want := range []string{base, cfg.DataDir, work, locks, filepath.Join(base, "m")} {
		if !slices.Contains(roots, want) {
			t.Errorf("roots %q lack %s", roots, want)
		}
	}
}
