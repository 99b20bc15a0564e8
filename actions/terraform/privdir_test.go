//go:build unix

package terraform_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
	"github.com/trueup-dev/trueup/actions/terraform"
)

// The default workDir has a predictable name in the shared temp folder: one that another
// user made, or that others can write to, is refused before anything is copied or run in it.
// Not parallel: it sets TMPDIR.
func TestWorkDirMustBePrivate(t *testing.T) {
	bin := binary(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	root := filepath.Join(tmp, fmt.Sprintf("trueup-terraform-%d", os.Geteuid()))
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		workDir string
		plant   func(t *testing.T)
		want    string
	}{
		{"default, others can write", "", func(t *testing.T) {
			if err := os.Mkdir(root, 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(root, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "lets others write to it"},
		{"configured, others can write", open, func(*testing.T) {}, "lets others write to it"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name    string
			workDir string
			plant   func(t *testing.T)
			want    string
		}{"default, another user's", "", func(t *testing.T) {
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(root, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.RemoveAll(root)
			tc.plant(t)
			cfg := config{Module: "testdata/modules/data", Binary: bin, WorkDir: tc.workDir}
			a, err := terraform.New(actiontest.MustJSON(t, cfg), actions.Env{Name: "private", BaseDir: ".", DatabaseURL: "postgres://x"})
			if err != nil {
				t.Fatal(err)
			}
			defer actions.Close(a)
			_, err = a.Reconcile(t.Context(), request("db", `{"size": 1}`))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one containing %q", err, tc.want)
			}
			if entries, _ := filepath.Glob(filepath.Join(root, "*", "*")); len(entries) > 0 {
				t.Fatalf("working copies made in a refused folder: %v", entries)
			}
		})
	}
	// A fresh default folder is created private and used.
	_ = os.RemoveAll(root)
	cfg := config{Module: "testdata/modules/data", Binary: bin}
	a, err := terraform.New(actiontest.MustJSON(t, cfg), actions.Env{Name: "private", BaseDir: ".", DatabaseURL: "postgres://x"})
	if err != nil {
		t.Fatal(err)
	}
	defer actions.Close(a)
	_, _ = a.Reconcile(t.Context(), request("db", `{"size": 1}`))
	fi, err := os.Stat(root)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("default work dir: %v, %v; want it created 0700", fi, err)
	}
}
