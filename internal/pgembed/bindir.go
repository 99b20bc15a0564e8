package pgembed

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// debianRoot is where Debian and Ubuntu install one bin folder per major version.
const debianRoot = "/usr/lib/postgresql"

// FindBinDir returns the folder holding the PostgreSQL server binaries (initdb and postgres).
//
// It asks `pg_config --bindir` first, but on Debian that may name the client-only folder
// (/usr/bin) of postgresql-client, so the answer is used only when it holds both binaries.
// Otherwise the newest /usr/lib/postgresql/<major>/bin that has them wins. The error says
// how to install them.
func FindBinDir() (string, error) {
	if dir, ok := pgConfigBinDir(); ok && hasServerBinaries(dir) {
		return dir, nil
	}
	if dir, ok := newestDebianBinDir(debianRoot); ok {
		return dir, nil
	}
	install := "apt-get install -y postgresql"
	if os.Geteuid() != 0 {
		install = "sudo " + install
	}
	return "", errors.New("PostgreSQL server binaries not found: install them with `" + install + "`")
}

func pgConfigBinDir() (string, bool) {
	path, err := exec.LookPath("pg_config")
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--bindir").Output()
	if err != nil {
		return "", false
	}
	dir := strings.TrimSpace(string(out))
	return dir, dir != ""
}

// newestDebianBinDir picks the highest major version under root that has the server binaries.
func newestDebianBinDir(root string) (string, bool) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", false
	}
	type candidate struct {
		version float64
		dir     string
	}
	var found []candidate
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64) // "15", or "9.6" for old majors
		if err != nil {
			continue
		}
		dir := filepath.Join(root, e.Name(), "bin")
		if hasServerBinaries(dir) {
			found = append(found, candidate{v, dir})
		}
	}
	if len(found) == 0 {
		return "", false
	}
	sort.Slice(found, func(i, j int) bool { return found[i].version > found[j].version })
	return found[0].dir, true
}

func hasServerBinaries(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}
