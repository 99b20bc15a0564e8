package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// daemonFiles are the files of the commands that run the daemon's own code, so they link the
// store: serve and migrate run it; validate and config check load a folder or a config as
// serve would (through internal/cli/validate, which links internal/daemon for it).
var daemonFiles = []string{"serve.go", "migrate.go", "validate.go", "configcheck.go"}

// TestCLIReadsTheAPIAsWire: the client commands and internal/cli, which does their work, read
// the API's answers as the wire types and link no database code: neither internal/store nor
// the pgx driver is among what they import, directly or through other packages. Only the
// daemon's commands (daemonFiles) and internal/cli/validate reach the store.
func TestCLIReadsTheAPIAsWire(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	importedBy := map[string][]string{} // a package the client part imports: the files that do
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || slices.Contains(daemonFiles, name) {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			importedBy[p] = append(importedBy[p], name)
		}
	}
	cli, err := exec.Command("go", "list", "../../internal/cli/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(cli)) {
		if !strings.HasSuffix(p, "/internal/cli/validate") {
			importedBy[p] = append(importedBy[p], "internal/cli")
		}
	}
	if len(importedBy) < 10 || importedBy["github.com/trueup-dev/trueup/internal/cli"] == nil {
		t.Fatalf("the client part imports %v: want the commands' imports and internal/cli", importedBy)
	}
	pkgs := make([]string, 0, len(importedBy))
	for p := range importedBy {
		pkgs = append(pkgs, p)
	}
	out, err := exec.Command("go", append([]string{"list", "-f", `{{.ImportPath}} {{join .Deps " "}}`}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		for _, dep := range f[1:] {
			if strings.HasSuffix(dep, "/internal/store") || strings.HasPrefix(dep, "github.com/jackc/pgx") {
				t.Errorf("%s (imported by %s) links %s", f[0], strings.Join(importedBy[f[0]], ", "), dep)
				break
			}
		}
	}
}
