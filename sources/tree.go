package sources

import (
	"context"
	"errors"
	"fmt"
)

// TreeFile is one file of a folder read at a revision by a TreeReader.
type TreeFile struct {
	// Path is slash-separated and relative to the folder read.
	Path       string
	Executable bool
	Data       []byte
}

// TreeReader is implemented by sources that can read any folder of any of their revisions
// (Git): the terraform action reads a module from the manifests repository at the revision a
// resource came from, so that module changes flow through Git like manifests do.
type TreeReader interface {
	// ReadTree returns the files under dir (slash-separated, relative to the repository's
	// root, not to the configured path) of revision (a full commit hash), sorted by path.
	// Symbolic links to files of the folder are read as those files. A missing folder gives
	// an error wrapping ErrPathNotFound; a folder over the limits (MaxFileBytes per file,
	// MaxTreeFiles, MaxTreeBytes), a link leading out of it or a submodule gives one
	// wrapping ErrTreeRefused; a commit the repository does not have (any more) one wrapping
	// ErrRevisionNotFound.
	ReadTree(ctx context.Context, revision, dir string) ([]TreeFile, error)
}

// RevisionFetcher is implemented by sources that can read the manifests of any of their
// revisions, not only the head's (Git): a pinned source applies the revision an operator
// chose. A folder source has no past revisions and does not implement it.
type RevisionFetcher interface {
	// FetchRevision returns the manifest files (IsManifest) under the configured path at
	// revision (a full commit hash), as Fetch does for the head. A commit the repository
	// does not have gives an error wrapping ErrRevisionNotFound; a missing path one wrapping
	// ErrPathNotFound.
	FetchRevision(ctx context.Context, revision string) (*Snapshot, error)
}

// Limits of ReadTree: a module folder is small; a huge one is a mistake (the wrong folder),
// and must cost an error, not the controller's memory.
const (
	MaxTreeFiles = 2000
	MaxTreeBytes = 32 << 20
)

// ErrTreeRefused says ReadTree will not read the folder as it is: only a new revision fixes it.
var ErrTreeRefused = errors.New("folder refused")

// ErrRevisionNotFound says the repository does not have the commit ReadTree was asked for:
// history was rewritten and the commit is gone, or it was never on a branch the source reads.
var ErrRevisionNotFound = errors.New("revision not found")

// Limits of a snapshot read with Env.AllFiles (every file under the path, for a render): a
// path over them is the wrong folder (a repository's root, build output), and must cost an
// error, not the controller's memory.
const (
	MaxSnapshotFiles = 100_000
	MaxSnapshotBytes = 8 * MaxTreeBytes
)

// SnapshotLimits caps a snapshot read with AllFiles; a zero field is MaxSnapshotFiles or
// MaxSnapshotBytes.
type SnapshotLimits struct{ Files, Bytes int }

// Check returns an error wrapping ErrTreeRefused, naming path (the file that went over),
// when files files of bytes bytes in all are over the limits, nil otherwise.
func (l SnapshotLimits) Check(path string, files, bytes int) error {
	maxFiles, maxBytes := l.Files, l.Bytes
	if maxFiles <= 0 {
		maxFiles = MaxSnapshotFiles
	}
	if maxBytes <= 0 {
		maxBytes = MaxSnapshotBytes
	}
	switch {
	case files > maxFiles:
		return fmt.Errorf("%s: more than %d files under the path, all of which a render reads: %w", path, maxFiles, ErrTreeRefused)
	case bytes > maxBytes:
		size := fmt.Sprintf("%d MiB", maxBytes>>20)
		if maxBytes < 1<<20 {
			size = fmt.Sprintf("%d bytes", maxBytes)
		}
		return fmt.Errorf("%s: more than %s under the path, all of which a render reads: %w", path, size, ErrTreeRefused)
	}
	return nil
}
