// Package sources declares the contract of a manifests source (DESIGN §2): something that can
// say cheaply which revision it is at and hand over the manifest files of a revision. Kinds
// live in sub-packages (gitsource, dirsource) and are wired by cmd/trueup.
package sources

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// ErrPathNotFound is returned by Fetch when the configured path does not exist in the
// revision. The syncer treats it as a failed fetch: nothing is applied or pruned.
var ErrPathNotFound = errors.New("source path not found")

// File is one manifest file of a snapshot.
type File struct {
	// Path is slash-separated and relative to the source's root (the repository root for
	// Git, the watched folder for a directory), e.g. "manifests/db/prod.yaml".
	Path string
	// Hash identifies the content (the Git blob hash, or a content hash); equal hashes mean
	// equal data, so parse results may be cached by it.
	Hash string
	Data []byte
	// Refused, when set, says why the source did not read the file (larger than
	// MaxFileBytes, a symlink leading out of the source's folder); Data is then empty. The
	// loader reports it as a problem of the file, which rejects the revision. The reason
	// never quotes the file's content.
	Refused string
	// RenderedBy is the kustomization (its path, as Path is) that produced this file when a
	// renderer made it from the revision's files; Path is then the file the documents came
	// from. Problems in it are reported as "path (rendered by …)". Empty for a file read as is.
	RenderedBy string
	// Unread says the source left Data out: a PartialFetcher's file whose content (Hash) the
	// caller said it holds.
	Unread bool
}

// MaxFileBytes is the largest manifest file a source reads. Sources check the size before
// reading (stat, the Git object header) and read through a bounded reader anyway, so that a
// huge file costs an error, not the controller's memory.
const MaxFileBytes = 1 << 20

// TooLarge is the Refused reason for a file over MaxFileBytes.
func TooLarge(size int64) string {
	return fmt.Sprintf("file is %s, larger than the 1 MiB limit", humanBytes(size))
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Snapshot is the set of manifest files of one revision.
type Snapshot struct {
	Revision string
	Files    []File
	// Author is the author of the revision's commit (zero when the source has none: a
	// folder). Policies read it as change.author; notAuthor refuses the author's approval.
	Author Author
}

// Author is who wrote a revision.
type Author struct {
	Name  string
	Email string
}

// Source is one configured manifests source.
type Source interface {
	// Head returns the revision the source is at now, as cheaply as possible (for Git, one
	// ls-remote on in-memory storage; no fetch, nothing written).
	Head(ctx context.Context) (string, error)
	// Fetch returns the manifest files (IsManifest) under the configured path at revision,
	// which is a value Head returned. A missing path gives an error wrapping
	// ErrPathNotFound.
	Fetch(ctx context.Context, revision string) (*Snapshot, error)
	// Close releases resources; it is safe to call twice.
	Close() error
}

// PartialFetcher is implemented by sources that can leave out of a snapshot the data of the
// files the caller already holds (a folder, which knows a file unchanged by its stat data).
type PartialFetcher interface {
	// FetchPartial is Fetch, except that a file whose path and content hash held reports
	// comes with Unread set and no Data when the source knows its hash without reading it.
	FetchPartial(ctx context.Context, revision string, held func(path, hash string) bool) (*Snapshot, error)
}

// Notifier is implemented by sources that learn of changes by themselves (a watched
// folder). The syncer then checks Head as soon as a value arrives instead of waiting for the
// next poll.
type Notifier interface {
	Changes() <-chan struct{}
}

// Starter is implemented by sources that run something of their own while they are in use
// (a watched folder's watcher). The host calls Start once, before the first Head, with a
// context that ends when the source is stopped; Close releases what it started.
type Starter interface {
	Start(ctx context.Context) error
}

// ClockProbePrefix begins the name of the empty hidden file a folder source writes in its
// folder and removes at once, to read the file system's clock; whatever reads a folder
// skips it.
const ClockProbePrefix = ".trueup-clock-"

// IsManifest reports whether a file name is read as manifests: *.yaml, *.yml and *.json,
// except Terraform's JSON files (*.tf.json, *.tfvars.json), which a module folder under the
// source's path may hold and which are never trueup documents.
func IsManifest(name string) bool {
	lower := strings.ToLower(name)
	switch path.Ext(lower) {
	case ".yaml", ".yml":
		return true
	case ".json":
		return !strings.HasSuffix(lower, ".tf.json") && !strings.HasSuffix(lower, ".tfvars.json")
	}
	return false
}

// Within reports whether the resolved (symlink-free) path p is root or below it; folder
// sources refuse symlinks that lead out of their folder.
func Within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
