package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/trueup-dev/trueup/sources"
)

// Layout of cfg.Dir: "mirror" is a symlink to the current generation "gen-<n>", a complete
// bare repository. A fetch writes "tmp-<random>", renames it to a new generation, and
// replaces the symlink with a rename, which is atomic: a crash leaves either the old or the
// new mirror in place, never a partial one.
const (
	mirrorLink = "mirror"
	genPrefix  = "gen-"
	tmpPrefix  = "tmp-"

	// objectCacheSize bounds go-git's cache of decoded objects per repository. Blob data is
	// cached by the source itself (Source.blobs), so this mostly serves trees and deltas.
	objectCacheSize = 4 << 20
)

// commitRef is the local ref a fetched commit (cfg.Commit) is stored under in the mirror.
const commitRef = plumbing.ReferenceName("refs/heads/trueup-commit")

// Fetch returns the manifest files of revision (a commit hash that Head returned). When the
// local mirror already holds that commit it is served without network I/O; otherwise the
// configured ref is fetched anew, shallow (depth 1), without tags, into a fresh mirror. If
// the ref moved on between Head and Fetch, the snapshot is of the commit actually fetched
// and its Revision says so. An empty revision fetches the ref's current commit.
//
// For a configured Commit, the commit alone is fetched (depth 1) when the server allows it
// (it advertises allow-reachable-sha1-in-want or allow-tip-sha1-in-want, as the big forges
// do; plain git needs uploadpack.allowReachableSHA1InWant). Otherwise, since go-git cannot
// ask for an unadvertised object, all branches and tags are cloned in full and the commit is
// looked up there. Either way this happens once: later fetches are served from the mirror.
func (s *Source) Fetch(ctx context.Context, revision string) (*sources.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil, s.errorf(ctx, "fetch", errClosed)
	}
	if err := ctx.Err(); err != nil {
		return nil, s.errorf(ctx, "fetch", err)
	}
	// The first fetch of a process (its first sync) cleans the folder of a crash's leftovers.
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	var want plumbing.Hash
	switch {
	case s.refName == "":
		want = s.commit
	case revision != "":
		if !plumbing.IsHash(revision) {
			return nil, s.errorf(ctx, "fetch", fmt.Errorf("revision %q is not a commit hash", revision))
		}
		want = plumbing.NewHash(revision)
	}

	if s.last != nil && want.String() == s.last.Revision {
		s.logger.Debug("served from the last snapshot", "revision", s.last.Revision)
		return &sources.Snapshot{Revision: s.last.Revision, Author: s.last.Author, Files: slices.Clone(s.last.Files)}, nil
	}
	if !want.IsZero() {
		if snap, err := s.fromMirror(ctx, want); snap != nil || err != nil {
			return snap, err
		}
	}

	start := time.Now()
	commit, err := s.fetchMirror(ctx)
	if err != nil {
		return nil, err
	}
	if !want.IsZero() && commit.Hash != want {
		s.logger.Info("ref moved since head, using the fetched commit",
			"ref", s.refDesc(), "wanted", want.String(), "revision", commit.Hash.String())
	}
	snap, err := s.snapshot(ctx, s.mirror.Storer, commit)
	if err != nil {
		return nil, err
	}
	s.logger.Info("fetched", "revision", snap.Revision, "files", len(snap.Files),
		"duration_ms", time.Since(start).Milliseconds())
	return snap, nil
}

// fromMirror serves want from the local mirror. It returns (nil, nil) when the mirror does
// not hold the commit, and the caller fetches.
func (s *Source) fromMirror(ctx context.Context, want plumbing.Hash) (*sources.Snapshot, error) {
	if s.mirror == nil {
		if err := s.openMirror(); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				s.logger.Warn("cannot open the local mirror, fetching anew", "error", s.secrets.scrub(err.Error()))
			}
			return nil, nil
		}
	}
	commit, err := s.mirror.CommitObject(want)
	if err != nil {
		if !errors.Is(err, plumbing.ErrObjectNotFound) {
			s.logger.Warn("cannot read the local mirror, fetching anew", "error", s.secrets.scrub(err.Error()))
		}
		return nil, nil
	}
	snap, err := s.snapshot(ctx, s.mirror.Storer, commit)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// A mirror holds whole trees of the commits it has, so this means damage.
		s.logger.Warn("local mirror is incomplete, fetching anew", "revision", want.String())
		return nil, nil
	}
	if err == nil {
		s.logger.Debug("served from the local mirror", "revision", snap.Revision, "files", len(snap.Files))
	}
	return snap, err
}

func newStorage(dir string) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRU(objectCacheSize),
		filesystem.Options{ExclusiveAccess: true, KeepDescriptors: true})
}

// openMirror opens the current generation (after a restart, the one a previous process
// left); it returns an error wrapping os.ErrNotExist when there is none.
func (s *Source) openMirror() error {
	target, err := os.Readlink(filepath.Join(s.cfg.Dir, mirrorLink))
	if err != nil {
		return err
	}
	sto := newStorage(filepath.Join(s.cfg.Dir, target))
	repo, err := git.Open(sto, nil)
	if err != nil {
		_ = sto.Close()
		return err
	}
	s.mirror, s.mirrorSto = repo, sto
	return nil
}

// fetchMirror fetches the configured ref (or commit) into a new bare repository, makes it
// the mirror and returns the fetched commit.
func (s *Source) fetchMirror(ctx context.Context) (*object.Commit, error) {
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(s.cfg.Dir, tmpPrefix)
	if err != nil {
		return nil, s.errorf(ctx, "fetch", err)
	}
	swapped := false
	defer func() {
		if !swapped {
			_ = os.RemoveAll(tmp)
		}
	}()

	hash, err := s.fetchInto(ctx, tmp)
	if err != nil {
		return nil, err
	}
	if err := s.swap(tmp); err != nil {
		return nil, s.errorf(ctx, "fetch", fmt.Errorf("install mirror: %w", err))
	}
	swapped = true
	if err := s.openMirror(); err != nil {
		return nil, s.errorf(ctx, "fetch", fmt.Errorf("open mirror: %w", err))
	}
	commit, err := s.mirror.CommitObject(hash)
	if err != nil {
		return nil, s.errorf(ctx, "fetch", fmt.Errorf("read commit %s: %w", hash, err))
	}
	return commit, nil
}

// fetchInto fetches into a new bare repository at dir and returns the commit fetched.
func (s *Source) fetchInto(ctx context.Context, dir string) (plumbing.Hash, error) {
	sto := newStorage(dir)
	defer func() { _ = sto.Close() }()
	repo, err := git.Init(sto, nil)
	if err != nil {
		return plumbing.ZeroHash, s.errorf(ctx, "fetch", err)
	}
	remote, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{s.url}})
	if err != nil {
		return plumbing.ZeroHash, s.errorf(ctx, "fetch", err)
	}

	var hash plumbing.Hash
	if s.refName == "" {
		err = s.fetchRefs(ctx, remote, 1, gitconfig.RefSpec(s.commit.String()+":"+commitRef.String()))
		if errors.Is(err, git.ErrExactSHA1NotSupported) {
			s.logger.Info("server cannot send a single commit, cloning all branches and tags",
				"commit", s.commit.String())
			err = s.fetchRefs(ctx, remote, 0, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := repo.CommitObject(s.commit); err != nil {
			return plumbing.ZeroHash, s.secrets.wrap(fmt.Errorf("%s not found at %s: %w", s.refDesc(), s.redacted, err))
		}
		hash = s.commit
	} else {
		spec := gitconfig.RefSpec("+" + s.refName.String() + ":" + s.refName.String())
		if err := s.fetchRefs(ctx, remote, 1, spec); err != nil {
			return plumbing.ZeroHash, err
		}
		ref, err := repo.Reference(s.refName, false)
		if err != nil {
			return plumbing.ZeroHash, s.errorf(ctx, "fetch", err)
		}
		if hash, err = peel(repo, ref.Hash()); err != nil {
			return plumbing.ZeroHash, s.errorf(ctx, "fetch", err)
		}
	}
	// HEAD names the commit, so that the mirror is an ordinary bare repository for the git CLI.
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.HEAD, hash)); err != nil {
		return plumbing.ZeroHash, s.errorf(ctx, "fetch", err)
	}
	return hash, nil
}

func (s *Source) fetchRefs(ctx context.Context, remote *git.Remote, depth int, specs ...gitconfig.RefSpec) error {
	return s.fetchRefsOf(ctx, s.refDesc(), remote, depth, specs...)
}

// fetchRefsOf is fetchRefs naming desc ("branch main", "ref refs/pull/7/head") in errors.
func (s *Source) fetchRefsOf(ctx context.Context, desc string, remote *git.Remote, depth int, specs ...gitconfig.RefSpec) error {
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	auth, token, err := s.authFor(ctx)
	if err != nil {
		return s.errorfOf(ctx, "fetch", desc, err)
	}
	s.fetches.Add(1)
	err = token.wrap(remote.FetchContext(ctx, &git.FetchOptions{
		RefSpecs: specs,
		Depth:    depth,
		Tags:     git.NoTags,
		Auth:     auth,
	}))
	var noMatch git.NoMatchingRefSpecError
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	case errors.Is(err, git.ErrExactSHA1NotSupported):
		return err // the caller falls back to a full clone
	case ctx.Err() == nil && (errors.As(err, &noMatch) || errors.Is(err, transport.ErrEmptyRemoteRepository)):
		return s.secrets.wrap(fmt.Errorf("%s not found at %s: %w", desc, s.redacted, err))
	}
	return s.errorfOf(ctx, "fetch", desc, err)
}

// peel follows annotated (possibly nested) tags to the commit.
func peel(repo *git.Repository, h plumbing.Hash) (plumbing.Hash, error) {
	for range 8 {
		tag, err := repo.TagObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			break // not a tag object
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
		h = tag.Target
	}
	if _, err := repo.CommitObject(h); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit %s: %w", h, err)
	}
	return h, nil
}

// swap renames the fetched repository at tmp to a new generation, points the mirror link at
// it and removes the older generations.
func (s *Source) swap(tmp string) error {
	gen := genPrefix + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.Rename(tmp, filepath.Join(s.cfg.Dir, gen)); err != nil {
		return err
	}
	link := filepath.Join(s.cfg.Dir, tmpPrefix+gen+".link")
	if err := os.Symlink(gen, link); err != nil {
		_ = os.RemoveAll(filepath.Join(s.cfg.Dir, gen))
		return err
	}
	if err := os.Rename(link, filepath.Join(s.cfg.Dir, mirrorLink)); err != nil {
		_ = os.Remove(link)
		_ = os.RemoveAll(filepath.Join(s.cfg.Dir, gen))
		return err
	}
	s.closeMirror()
	removeStale(s.cfg.Dir)
	return nil
}

// removeStale deletes what is not the current mirror: older generations and the leftovers of
// fetches interrupted by a crash.
func removeStale(dir string) {
	current, _ := os.Readlink(filepath.Join(dir, mirrorLink))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if name != current && (strings.HasPrefix(name, genPrefix) || strings.HasPrefix(name, tmpPrefix)) {
			_ = os.RemoveAll(filepath.Join(dir, name))
		}
	}
}
