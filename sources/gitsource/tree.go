package gitsource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/trueup-dev/trueup/sources"
)

// snapshot reads the manifest files under the configured path from commit's tree. Blobs
// whose hash was in the previous snapshot are not read again; afterwards the cache holds
// exactly this snapshot's blobs.
func (s *Source) snapshot(ctx context.Context, sto storer.EncodedObjectStorer, commit *object.Commit) (*sources.Snapshot, error) {
	snap, blobs, err := s.readTree(ctx, sto, commit, s.blobs)
	if err != nil {
		return nil, err
	}
	s.blobs = blobs
	s.last = &sources.Snapshot{Revision: snap.Revision, Author: snap.Author, Files: slices.Clone(snap.Files)}
	return snap, nil
}

// readTree reads the manifest files under the configured path from commit's tree, taking the
// data of blobs found in cache (which it does not change) instead of reading them again. It
// returns the snapshot and its blobs by hash.
func (s *Source) readTree(ctx context.Context, sto storer.EncodedObjectStorer, commit *object.Commit, cache map[plumbing.Hash][]byte) (*sources.Snapshot, map[plumbing.Hash][]byte, error) {
	rev := commit.Hash.String()
	op := "read commit " + rev + " of" // "read commit abc… of branch main at <url>"
	if s.refName == "" {
		op = "read" // "read commit abc… at <url>"
	}
	fail := func(err error) (*sources.Snapshot, map[plumbing.Hash][]byte, error) {
		return nil, nil, s.errorf(ctx, op, err)
	}
	root, err := commit.Tree()
	if err != nil {
		return fail(err)
	}
	if s.subdir != "" {
		entry, err := root.FindEntry(s.subdir)
		switch {
		case errors.Is(err, object.ErrEntryNotFound), errors.Is(err, object.ErrDirectoryNotFound):
			return fail(fmt.Errorf("path %q: %w", s.subdir, sources.ErrPathNotFound))
		case err != nil:
			return fail(err)
		case entry.Mode != filemode.Dir:
			return fail(fmt.Errorf("path %q is not a directory: %w", s.subdir, sources.ErrPathNotFound))
		}
		if root, err = object.GetTree(sto, entry.Hash); err != nil {
			return fail(err)
		}
	}

	type entry struct {
		path string
		hash plumbing.Hash
	}
	var entries []entry
	walker := object.NewTreeWalker(root, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(err)
		}
		// Symlinks (their blob is the target path) and submodules are not manifests.
		if (e.Mode != filemode.Regular && e.Mode != filemode.Executable && e.Mode != filemode.Deprecated) ||
			!(s.cfg.AllFiles || sources.IsManifest(name)) || hidden(name) {
			continue
		}
		entries = append(entries, entry{path: joinPath(s.subdir, name), hash: e.Hash})
		if s.cfg.AllFiles {
			if err := s.limits.Check(joinPath(s.subdir, name), len(entries), 0); err != nil {
				return fail(err)
			}
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })

	snap := &sources.Snapshot{Revision: rev, Author: sources.Author{Name: commit.Author.Name, Email: commit.Author.Email},
		Files: make([]sources.File, len(entries))}
	blobs := make(map[plumbing.Hash][]byte, len(entries))
	total := 0
	for i, e := range entries {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
		}
		data, ok := blobs[e.hash]
		if !ok {
			data, ok = cache[e.hash]
		}
		if !ok {
			var refused string
			if data, refused, err = readBlob(sto, e.hash); err != nil {
				return fail(fmt.Errorf("%s: %w", e.path, err))
			}
			if refused != "" {
				snap.Files[i] = sources.File{Path: e.path, Hash: e.hash.String(), Refused: refused}
				continue
			}
		}
		if total += len(data); s.cfg.AllFiles {
			if err := s.limits.Check(e.path, i+1, total); err != nil {
				return fail(err)
			}
		}
		blobs[e.hash] = data
		snap.Files[i] = sources.File{Path: e.path, Hash: e.hash.String(), Data: data}
	}
	return snap, blobs, nil
}

// objectSizer is implemented by go-git's filesystem and memory storages: they read an
// object's size from its header without inflating it.
type objectSizer interface {
	EncodedObjectSize(plumbing.Hash) (int64, error)
}

// The storages readBlob reads from: the mirror's and an in-memory repository's.
var (
	_ objectSizer = (*filesystem.Storage)(nil)
	_ objectSizer = (*memory.Storage)(nil)
)

// readBlob reads a blob, refusing one over sources.MaxFileBytes by the size in its object
// header, before any of its content is read or inflated. refused is then the reason.
func readBlob(sto storer.EncodedObjectStorer, h plumbing.Hash) (data []byte, refused string, err error) {
	var size int64
	if sizer, ok := sto.(objectSizer); ok {
		size, err = sizer.EncodedObjectSize(h)
	} else {
		var obj plumbing.EncodedObject
		obj, err = sto.EncodedObject(plumbing.BlobObject, h)
		if err == nil {
			size = obj.Size()
		}
	}
	if err != nil {
		return nil, "", err
	}
	if size > sources.MaxFileBytes {
		return nil, sources.TooLarge(size), nil
	}
	blob, err := object.GetBlob(sto, h)
	if err != nil {
		return nil, "", err
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = r.Close() }()
	var buf bytes.Buffer
	buf.Grow(int(size) + bytes.MinRead)
	if _, err := buf.ReadFrom(io.LimitReader(r, sources.MaxFileBytes+1)); err != nil {
		return nil, "", err
	}
	if buf.Len() > sources.MaxFileBytes {
		return nil, sources.TooLarge(int64(buf.Len())), nil
	}
	return buf.Bytes(), "", nil
}

// hidden reports whether a slash-separated path has a component starting with ".".
func hidden(p string) bool {
	return strings.HasPrefix(p, ".") || strings.Contains(p, "/.")
}

func joinPath(dir, name string) string {
	if dir == "" {
		return name
	}
	return path.Join(dir, name)
}
