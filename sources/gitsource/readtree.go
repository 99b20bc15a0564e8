package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/trueup-dev/trueup/sources"
)

// maxLinkHops bounds how many symbolic links ReadTree follows from one path.
const maxLinkHops = 8

// ReadTree returns the files under dir of revision (sources.TreeReader): a Terraform module
// kept in the manifests repository, read at the commit a resource came from (atCommit says
// where the commit is read from).
func (s *Source) ReadTree(ctx context.Context, revision, dir string) ([]sources.TreeFile, error) {
	desc := "commit " + revision
	sub, err := cleanSubdir(dir)
	if err != nil {
		return nil, s.errorfOf(ctx, "read", desc, fmt.Errorf("%w: %w", err, sources.ErrTreeRefused))
	}
	start := time.Now()
	var files []sources.TreeFile
	err = s.atCommit(ctx, revision, func(sto storer.EncodedObjectStorer, commit *object.Commit) error {
		var err error
		if files, err = readFolder(ctx, sto, commit, sub); err != nil {
			return s.errorfOf(ctx, "read", desc, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.logger.Debug("read folder", "revision", revision, "dir", sub, "files", len(files), "duration_ms", time.Since(start).Milliseconds())
	return files, nil
}

// FetchRevision returns the manifest files under the configured path of revision, a commit
// the mirror holds or the remote serves (sources.RevisionFetcher, atCommit): a pinned source
// applies an older commit than its head. It does not check that revision is on the tracked
// branch, and a forge may serve a pull request's or a fork's commit by hash: the store pins
// only revisions the source applied (store.PinSource). It reads the commit as ReadTree does, and never moves the mirror.
func (s *Source) FetchRevision(ctx context.Context, revision string) (*sources.Snapshot, error) {
	start := time.Now()
	s.mu.Lock()
	cache := s.blobs // replaced, never changed, by snapshot: safe to read unlocked
	s.mu.Unlock()
	var snap *sources.Snapshot
	err := s.atCommit(ctx, revision, func(sto storer.EncodedObjectStorer, commit *object.Commit) error {
		var err error
		snap, _, err = s.readTree(ctx, sto, commit, cache)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.logger.Debug("fetched revision", "revision", revision, "files", len(snap.Files), "duration_ms", time.Since(start).Milliseconds())
	return snap, nil
}

// atCommit calls read with revision's commit and the storage holding it.
//
// The mirror serves the commit when it holds it (the revision last synced), under the fetch
// lock but without network I/O (a read failing with plumbing.ErrObjectNotFound there is
// tried again as if the mirror lacked the commit). Otherwise the commit is fetched as
// FetchRef fetches a ref: into a scratch repository beside the mirror, without the lock, read
// and removed; neither the mirror nor the tracked ref moves. The commit alone is asked for
// (depth 1) when the server allows it (allow-reachable-sha1-in-want, as the big forges do);
// otherwise the tracked ref's whole history is fetched and the commit looked up there, so a
// commit that is on no branch the source tracks (a pull request's head) cannot be read from
// plain git without uploadpack.allowReachableSHA1InWant.
func (s *Source) atCommit(ctx context.Context, revision string, read func(storer.EncodedObjectStorer, *object.Commit) error) error {
	desc := "commit " + revision
	if s.closed.Load() {
		return s.errorfOf(ctx, "read", desc, errClosed)
	}
	if !plumbing.IsHash(revision) {
		return s.errorfOf(ctx, "read", desc, fmt.Errorf("revision %q is not a commit hash", revision))
	}
	want := plumbing.NewHash(revision)
	if ok, err := s.fromMirrorWith(ctx, want, desc, read); ok || err != nil {
		return err
	}

	repo, remote, done, err := s.scratch(ctx, desc)
	if err != nil {
		return err
	}
	defer done()
	err = s.fetchRefsOf(ctx, desc, remote, 1, gitconfig.RefSpec(want.String()+":"+fetchedRef.String()))
	// A server that cannot send a commit alone, or refuses this one ("not our ref", and may
	// hang up while the request is still being written), is asked for the tracked ref's
	// history: the commit is then found there, or known to be gone. Any other failure (a
	// timeout, a reset connection) is returned as it is, for the caller to retry: it says
	// nothing of whether the commit exists.
	if err != nil && ctx.Err() == nil && s.refName != "" && singleCommitRefused(err) {
		s.logger.Info("server did not send the commit alone, fetching the tracked ref's history", "revision", revision, "ref", s.refDesc())
		err = s.fetchRefsOf(ctx, s.refDesc(), remote, 0, gitconfig.RefSpec("+"+s.refName.String()+":"+fetchedRef.String()))
	}
	if err != nil && ctx.Err() == nil && commitRefused(err) {
		return fmt.Errorf("%w: %w", err, sources.ErrRevisionNotFound)
	}
	if err != nil {
		return err
	}
	commit, err := repo.CommitObject(want)
	if err != nil {
		return s.secrets.wrap(fmt.Errorf("%s not found at %s (not on %s, and the server did not send it alone): %w: %w",
			desc, s.redacted, s.refDesc(), sources.ErrRevisionNotFound, err))
	}
	return read(repo.Storer, commit)
}

// fromMirrorWith calls read with the commit from the mirror when it holds it; ok is false
// when it does not (or is damaged), and the caller fetches.
func (s *Source) fromMirrorWith(ctx context.Context, want plumbing.Hash, desc string, read func(storer.EncodedObjectStorer, *object.Commit) error) (ok bool, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false, s.errorfOf(ctx, "read", desc, errClosed)
	}
	if s.mirror == nil {
		if err := s.openMirror(); err != nil {
			return false, nil
		}
	}
	commit, err := s.mirror.CommitObject(want)
	if err != nil {
		return false, nil
	}
	err = read(s.mirror.Storer, commit)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	return true, err
}

// readFolder reads the files under sub of commit's tree, within the limits of
// sources.TreeReader.
func readFolder(ctx context.Context, sto storer.EncodedObjectStorer, commit *object.Commit, sub string) ([]sources.TreeFile, error) {
	root, err := commit.Tree()
	if err != nil {
		return nil, err
	}
	if sub != "" {
		entry, err := root.FindEntry(sub)
		switch {
		case errors.Is(err, object.ErrEntryNotFound), errors.Is(err, object.ErrDirectoryNotFound):
			return nil, fmt.Errorf("folder %q: %w", sub, sources.ErrPathNotFound)
		case err != nil:
			return nil, err
		case entry.Mode != filemode.Dir:
			return nil, fmt.Errorf("%q is not a folder: %w", sub, sources.ErrPathNotFound)
		}
		if root, err = object.GetTree(sto, entry.Hash); err != nil {
			return nil, err
		}
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("folder %q: %s: %w", sub, fmt.Sprintf(format, args...), sources.ErrTreeRefused)
	}

	type entry struct {
		hash plumbing.Hash
		mode filemode.FileMode
	}
	entries := map[string]entry{}
	dirs := map[string]bool{"": true}
	walker := object.NewTreeWalker(root, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch e.Mode {
		case filemode.Dir:
			dirs[name] = true
		case filemode.Submodule:
			return nil, refuse("%s is a submodule", name)
		default:
			entries[name] = entry{hash: e.Hash, mode: e.Mode}
			if len(entries) > sources.MaxTreeFiles {
				return nil, refuse("more than %d files", sources.MaxTreeFiles)
			}
		}
	}

	// Symbolic links are read as the file they lead to, which must be in the folder.
	target := func(name string) (string, error) {
		for range maxLinkHops {
			e := entries[name]
			if e.mode != filemode.Symlink {
				return name, nil
			}
			data, refused, err := readBlob(sto, e.hash)
			if err != nil {
				return "", err
			}
			to := string(data)
			if refused != "" || path.IsAbs(to) {
				return "", refuse("symbolic link %s leads out of the folder", name)
			}
			next := path.Join(path.Dir(name), to)
			if next == ".." || strings.HasPrefix(next, "../") {
				return "", refuse("symbolic link %s leads out of the folder", name)
			}
			if _, ok := entries[next]; !ok {
				if dirs[next] || next == "." {
					return "", refuse("symbolic link %s leads to a folder", name)
				}
				return "", refuse("symbolic link %s leads to %s, which is not a file of the folder", name, next)
			}
			name = next
		}
		return "", refuse("symbolic link %s: more than %d links in a row", name, maxLinkHops)
	}

	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names)
	files := make([]sources.TreeFile, 0, len(names))
	total := 0
	for i, name := range names {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		file, err := target(name)
		if err != nil {
			return nil, err
		}
		e := entries[file]
		data, refused, err := readBlob(sto, e.hash)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if refused != "" {
			return nil, refuse("%s: %s", name, refused)
		}
		if total += len(data); total > sources.MaxTreeBytes {
			return nil, refuse("more than %d MiB", sources.MaxTreeBytes>>20)
		}
		files = append(files, sources.TreeFile{Path: name, Executable: e.mode == filemode.Executable, Data: data})
	}
	return files, nil
}

var (
	_ sources.TreeReader      = (*Source)(nil)
	_ sources.RevisionFetcher = (*Source)(nil)
)

// singleCommitRefused reports whether a fetch of one commit failed because the server would
// not send it alone: it cannot send single commits, refuses this one, or hung up on the
// request (what a server refusing a want does over a pipe).
func singleCommitRefused(err error) bool {
	return errors.Is(err, git.ErrExactSHA1NotSupported) || commitRefused(err) ||
		errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "broken pipe")
}

// commitRefused says a fetch of a single commit failed because the server does not have it:
// a server that sends single commits (uploadpack.allowReachableSHA1InWant, as GitHub and
// GitLab) refuses the want of a commit reachable from none of its refs ("not our ref"), and
// none of the asked refs may match.
func commitRefused(err error) bool {
	var noMatch git.NoMatchingRefSpecError
	return errors.As(err, &noMatch) || strings.Contains(err.Error(), "not our ref")
}
