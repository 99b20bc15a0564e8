//go:build unix

package terraform_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An upgrade of the binary in place (same path, another version) initialises the working
// copies again; an unchanged binary does not.
func TestBinaryUpgradeReinits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform")
	argsFile := filepath.Join(dir, "args")
	install := func(version string) {
		t.Helper()
		script := fmt.Sprintf(`#!/usr/bin/env bash
printf '%%s\n' "$*" >>%q
if [[ "$1" == version ]]; then
	printf '{"terraform_version": "%s", "platform": "linux_amd64"}\n'
	exit 0
fi
exec %q "$@"
`, argsFile, version, binary(t))
		tmp := bin + ".new"
		if err := os.WriteFile(tmp, []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, bin); err != nil {
			t.Fatal(err)
		}
	}
	install("1.0.0")
	f := setup(t, "upgrade", config{Binary: bin})
	req := request("db", `{"size": 1}`)
	inits := func() int { return strings.Count(read(t, argsFile), "init ") }
	for range 2 {
		if _, err := f.action.Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n := inits(); n != 1 {
		t.Fatalf("init ran %d times with one binary; want 1", n)
	}
	install("1.10.0")
	if _, err := f.action.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if n := inits(); n != 2 {
		t.Fatalf("init ran %d times; want 2 (the binary was upgraded once)", n)
	}
	if n := strings.Count(read(t, argsFile), "version -json"); n != 2 {
		t.Fatalf("version ran %d times; want once per binary", n)
	}
}
