package gitsource

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/trueup-dev/trueup/sources"
)

// refPrefix names FetchRef's scratch repositories in cfg.Dir. Unlike the tmp- folders of the
// mirror's fetches they are not removed when the mirror is swapped (a preview may be reading
// one then), only by FetchRef itself and, after a crash, by the first use of the folder in a
// process (prepare).
const refPrefix = "ref-"

// fetchedRef is where FetchRef stores the fetched ref in its scratch repository.
const fetchedRef = plumbing.ReferenceName("refs/trueup/fetched")

// FetchRef returns the manifest files (under the configured path) of the commit ref points at
// on the remote: a pull request's head, refs/pull/7/head on GitHub and Gitea,
// refs/merge-requests/7/head on GitLab. want, when set, is the commit the caller expects; the
// snapshot's Revision says which commit was actually read (the ref may have moved on).
//
// It never touches what Fetch and Head work with: the ref is fetched (shallow, no tags) into
// a scratch bare repository beside the mirror, read, and removed. The mirror is not written
// because it is opened for exclusive access by the syncing goroutine and replaced wholesale
// by each new fetch; writing into it would mean holding the fetch lock through the network
// round trip, delaying the source's syncs. Blobs the last snapshot already read are taken
// from its cache rather than read again. FetchRef may run while Fetch does.
func (s *Source) FetchRef(ctx context.Context, ref, want string) (*sources.Snapshot, error) {
	desc := "ref " + ref
	if s.closed.Load() {
		return nil, s.errorfOf(ctx, "fetch", desc, errClosed)
	}
	name := plumbing.ReferenceName(ref)
	if !strings.HasPrefix(ref, "refs/") || name.Validate() != nil {
		return nil, s.errorfOf(ctx, "fetch", desc, fmt.Errorf("%q is not a full ref name", ref))
	}
	if want != "" && !plumbing.IsHash(want) {
		return nil, s.errorfOf(ctx, "fetch", desc, fmt.Errorf("revision %q is not a commit hash", want))
	}
	start := time.Now()
	repo, remote, done, err := s.scratch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := s.fetchRefsOf(ctx, desc, remote, 1, gitconfig.RefSpec("+"+ref+":"+fetchedRef.String())); err != nil {
		return nil, err
	}
	r, err := repo.Reference(fetchedRef, false)
	if err != nil {
		return nil, s.errorfOf(ctx, "fetch", desc, err)
	}
	hash, err := peel(repo, r.Hash())
	if err != nil {
		return nil, s.errorfOf(ctx, "fetch", desc, err)
	}
	if want != "" && hash.String() != strings.ToLower(want) {
		s.logger.Info("ref moved since it was announced, reading the fetched commit", "ref", ref, "wanted", want, "revision", hash.String())
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		return nil, s.errorfOf(ctx, "fetch", desc, err)
	}
	s.mu.Lock()
	cache := s.blobs // replaced, never changed, by snapshot: safe to read unlocked
	s.mu.Unlock()
	snap, _, err := s.readTree(ctx, repo.Storer, commit, cache)
	if err != nil {
		return nil, err
	}
	s.logger.Debug("fetched ref", "ref", ref, "revision", snap.Revision, "files", len(snap.Files), "duration_ms", time.Since(start).Milliseconds())
	return snap, nil
}

// scratch creates an empty bare repository beside the mirror, with the source's remote; done
// removes it.
func (s *Source) scratch(ctx context.Context, desc string) (*git.Repository, *git.Remote, func(), error) {
	if err := s.prepare(ctx); err != nil {
		return nil, nil, nil, err
	}
	tmp, err := os.MkdirTemp(s.cfg.Dir, refPrefix)
	if err != nil {
		return nil, nil, nil, s.errorfOf(ctx, "fetch", desc, err)
	}
	sto := newStorage(tmp)
	done := func() {
		_ = sto.Close()
		_ = os.RemoveAll(tmp)
	}
	repo, err := git.Init(sto, nil)
	if err != nil {
		done()
		return nil, nil, nil, s.errorfOf(ctx, "fetch", desc, err)
	}
	remote, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: git.DefaultRemoteName, URLs: []string{s.url}})
	if err != nil {
		done()
		return nil, nil, nil, s.errorfOf(ctx, "fetch", desc, err)
	}
	return repo, remote, done, nil
}

// removeRefScratch removes FetchRef's scratch repositories left by a crash.
func removeRefScratch(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), refPrefix) {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}
