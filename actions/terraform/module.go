package terraform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/sources"
)

// maxTreeHashes bounds the cache of module hashes by revision; past it the cache starts over.
const maxTreeHashes = 1024

// module is the root module of one call: its content hash (the init cache key) and how to
// write it into a working copy.
type module struct {
	desc  string // for logs and errors: a folder, or infra@abc1234:modules/db
	hash  string
	write func(ctx context.Context, dst string) error
}

// moduleOf returns the call's module: the configured folder, or the source's folder at the
// revision the resource came from.
func (a *Action) moduleOf(ctx context.Context, res actions.Resource) (module, error) {
	if a.repo.source == "" {
		hash, err := moduleHash(a.module)
		if err != nil {
			return module{}, actions.Terminalf("module %s: %w", a.module, err)
		}
		return module{desc: a.module, hash: hash, write: func(_ context.Context, dst string) error {
			return copyModule(a.module, dst, a.backend)
		}}, nil
	}
	// A revision names a commit of the resource's own source: read in another repository it
	// means nothing (or, worse, something else).
	if res.Source != a.repo.source {
		return module{}, actions.Terminalf("module %s: the resource comes from source %q; a module of source %q is read at the revision of a resource of that source only",
			a.repo.path, res.Source, a.repo.source)
	}
	if res.Revision == "" {
		return module{}, actions.Terminalf("module %s of source %s: the resource has no revision to read it at", a.repo.path, a.repo.source)
	}
	if a.readTree == nil {
		return module{}, fmt.Errorf("module %s of source %s: no source repository can be read here", a.repo.path, a.repo.source)
	}
	if res.FallbackRevision == "" {
		return a.moduleAt(ctx, res.Revision, false)
	}
	// A delete: read now (not at the working copy's write) so that a commit gone from the
	// repository falls back to the source's newest revision instead of failing every retry.
	m, err := a.moduleAt(ctx, res.Revision, true)
	if errors.Is(err, sources.ErrRevisionNotFound) {
		a.logger.WarnContext(ctx, "terraform: module revision gone; deleting with the source's newest revision",
			"module", m.desc, "revision", res.Revision, "fallback", res.FallbackRevision, "error", err)
		return a.moduleAt(ctx, res.FallbackRevision, true)
	}
	return m, err
}

// moduleAt returns the module of the source's folder at revision. eager reads the files now
// even when the revision's hash is known.
func (a *Action) moduleAt(ctx context.Context, revision string, eager bool) (module, error) {
	m := module{desc: a.repo.source + "@" + revision + ":" + a.repo.path}
	read := func(ctx context.Context) ([]sources.TreeFile, error) {
		files, err := a.readTree(ctx, a.repo.source, revision, a.repo.path)
		switch {
		case errors.Is(err, sources.ErrPathNotFound), errors.Is(err, sources.ErrTreeRefused):
			return nil, actions.Terminalf("module %s: %w", m.desc, err)
		case err != nil:
			return nil, fmt.Errorf("module %s: %w", m.desc, err)
		}
		return files, nil
	}
	// A commit never changes: its module's hash is read once, and the files only when a
	// working copy needs them.
	key := a.repo.source + "\x00" + revision
	if hash, ok := a.trees.get(key); ok && !eager {
		m.hash = hash
		m.write = func(ctx context.Context, dst string) error {
			files, err := read(ctx)
			if err != nil {
				return err
			}
			return writeTree(files, dst, a.backend)
		}
		return m, nil
	}
	files, err := read(ctx)
	if err != nil {
		return m, err
	}
	m.hash = treeHash(files)
	a.trees.put(key, m.hash)
	m.write = func(_ context.Context, dst string) error { return writeTree(files, dst, a.backend) }
	return m, nil
}

// skipPath reports whether a file of a module read from a source is left out of the working
// copy, as walkModule leaves it out of a folder's.
func skipPath(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		if skipDir(p) {
			return true
		}
	}
	return skipFile(parts[len(parts)-1])
}

// treeHash digests a module read from a source as moduleHash digests a folder: the same
// files give the same hash whichever revision they come from, so that a commit that does not
// touch the module does not initialise it again.
func treeHash(files []sources.TreeFile) string {
	h := sha256.New()
	for _, f := range files {
		if skipPath(f.Path) {
			continue
		}
		fmt.Fprintf(h, "%s\x00%o\x00", f.Path, fileMode(f))
		h.Write(f.Data)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func fileMode(f sources.TreeFile) os.FileMode {
	if f.Executable {
		return 0o700
	}
	return 0o600
}

// writeTree writes a module read from a source into dst (created 0700), then the backend
// override, as copyModule does for a folder.
func writeTree(files []sources.TreeFile, dst, override string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	for _, f := range files {
		rel := filepath.FromSlash(f.Path)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("file %q leaves the module folder", f.Path)
		}
		if skipPath(f.Path) {
			continue
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return err
		}
		if err := writeFile0600(target, f.Data); err != nil {
			return err
		}
		if f.Executable {
			if err := os.Chmod(target, 0o700); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(dst, overrideFile), []byte(override), 0o600)
}

// treeHashes caches module hashes by source and revision.
type treeHashes struct {
	mu sync.Mutex
	m  map[string]string
}

func (t *treeHashes) get(key string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.m[key]
	return h, ok
}

func (t *treeHashes) put(key, hash string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTreeHashes {
		t.m = map[string]string{}
	}
	t.m[key] = hash
}
