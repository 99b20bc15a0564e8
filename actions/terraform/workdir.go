package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A resource's working copy, <workDir>/<workspace>/:
//
//	root/     the module's files and the backend override (what Terraform runs in)
//	data/     TF_DATA_DIR: the initialised backend and providers
//	stamp     what root/ and data/ were made from; init runs again only when it changes
//	call-*/   one call's var file and saved plan, removed when the call ends
//	unapplied the gate's plan made this working copy for a resource never applied (applied)
//	plans/    the gate's plan (KeepPlan), <apply|destroy>-<hash>.tfplan, and the digest of the spec
//	          and module it was made for (.request), until the next Reconcile,
//	          Delete or Observe of the resource applies or removes it
const overrideFile = "trueup_backend_override.tf.json"

// skipDir are folders of a module that are not copied: Terraform's own data and VCS folders.
func skipDir(name string) bool { return name == ".terraform" || name == ".git" }

// skipFile are files of a module that are not copied: local state must never be picked up.
func skipFile(name string) bool {
	return strings.HasSuffix(name, ".tfstate") || strings.HasSuffix(name, ".tfstate.backup") ||
		strings.HasPrefix(name, "terraform.tfstate") || name == overrideFile || name == sensitiveFile
}

// moduleHash digests the module's files (names, modes and contents), so that a changed
// module is copied and initialised again, and an unchanged one is not.
func moduleHash(dir string) (string, error) {
	h := sha256.New()
	err := walkModule(dir, func(rel string, info fs.FileInfo, path string) error {
		fmt.Fprintf(h, "%s\x00%o\x00", rel, info.Mode().Perm())
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		_, err = h.Write([]byte{0})
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// walkModule calls fn for each regular file of dir (symbolic links to files followed), in
// lexical order, skipping skipDir and skipFile.
func walkModule(dir string, fn func(rel string, info fs.FileInfo, path string) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if skipFile(d.Name()) {
			return nil
		}
		info, err := os.Stat(path) // follows a symbolic link
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		return fn(rel, info, path)
	})
}

// copyModule copies the module's files into dst (created 0700), then writes the backend
// override, readable by trueup's user only: a backend block may hold credentials.
func copyModule(src, dst, override string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	err := walkModule(src, func(rel string, info fs.FileInfo, path string) error {
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return err
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()&0o700|0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, overrideFile), []byte(override), 0o600)
}

// writeFile0600 writes a file only trueup's user can read: var files hold the spec, which may
// hold revealed secrets.
func writeFile0600(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
