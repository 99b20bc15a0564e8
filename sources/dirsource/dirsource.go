// Package dirsource owns the folder kind of manifests source (`dir:`; its fields are in
// docs/reference/config.md), meant for development: the manifests are the files of a local
// folder, the revision is a content hash over them, and an fsnotify watcher tells the syncer
// (sources.Notifier) when a manifest changed, so that an editor's save takes effect without
// waiting for the next poll.
//
// Hidden entries (names starting with "."), editor temp and swap files are never manifests
// and never trigger a change.
package dirsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/trueup-dev/trueup/sources"
)

// DefaultDebounce is the quiet period after the last event before a change is announced.
const DefaultDebounce = 200 * time.Millisecond

// Config configures one folder source.
type Config struct {
	// Name is the source name, for logs.
	Name string
	// Path is the watched folder; manifests are read from it and all its subfolders.
	Path string
	// Debounce is the quiet period that ends a burst of events; 0 means DefaultDebounce.
	Debounce time.Duration
	// AllFiles reads every regular file, not only manifests (sources.Env.AllFiles).
	AllFiles bool
}

// Source is a folder manifests source. Head and Fetch may be called from several
// goroutines, with or without Start.
type Source struct {
	cfg     Config
	root    string // absolute
	logger  *slog.Logger
	changes chan struct{}

	// limits caps a scan with cfg.AllFiles (zero: the sources defaults).
	limits sources.SnapshotLimits

	scanMu sync.Mutex           // serialises scans; guards stats
	stats  map[string]statEntry // relative path → last known content hash
	racy   time.Duration        // racyWindow; tests shorten it
	now    func() time.Time     // the process's clock; tests move it
	scans  int                  // scans made, for fullScanEvery

	mu      sync.Mutex // guards the lifecycle fields below
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
	watcher *fsnotify.Watcher
}

// New validates cfg: Path must exist and be a directory.
func New(cfg Config, logger *slog.Logger) (*Source, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Path == "" {
		return nil, fmt.Errorf("dir source %q: path is required", cfg.Name)
	}
	if cfg.Debounce < 0 {
		return nil, fmt.Errorf("dir source %q: debounce %v is negative", cfg.Name, cfg.Debounce)
	}
	if cfg.Debounce == 0 {
		cfg.Debounce = DefaultDebounce
	}
	root, err := filepath.Abs(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("dir source %q: %w", cfg.Name, err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("dir source %q: %w", cfg.Name, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("dir source %q: %s is not a directory", cfg.Name, root)
	}
	return &Source{
		cfg:     cfg,
		root:    root,
		logger:  logger.With("source", cfg.Name, "path", root),
		changes: make(chan struct{}, 1),
		stats:   map[string]statEntry{},
		racy:    racyWindow,
		now:     time.Now,
	}, nil
}

// Head returns "sha256:<hex>" over the sorted (relative path, content hash) pairs of all
// manifest files. Files whose size and modification time are unchanged since the last scan
// (and not modified too recently to trust) are not read again.
func (s *Source) Head(ctx context.Context) (string, error) {
	rev, _, err := s.scan(ctx, false, nil)
	if err != nil {
		return "", fmt.Errorf("dir source %q: head: %w", s.cfg.Name, err)
	}
	return rev, nil
}

// Fetch reads every manifest file. The snapshot's Revision is the hash of what was read,
// which differs from revision when the folder changed since Head.
func (s *Source) Fetch(ctx context.Context, revision string) (*sources.Snapshot, error) {
	return s.FetchPartial(ctx, revision, nil)
}

// FetchPartial is Fetch, but a file that the stat rule (statEntry) finds unchanged since its
// hashing and whose path and hash held reports is not read: it comes with Unread set. A
// one-file change then reads that file, not the folder.
func (s *Source) FetchPartial(ctx context.Context, revision string, held func(path, hash string) bool) (*sources.Snapshot, error) {
	rev, files, err := s.scan(ctx, true, held)
	if err != nil {
		return nil, fmt.Errorf("dir source %q: fetch: %w", s.cfg.Name, err)
	}
	if revision != "" && revision != rev {
		s.logger.Debug("folder changed since head", "wanted", revision, "revision", rev)
	}
	return &sources.Snapshot{Revision: rev, Files: files}, nil
}

// Changes receives a value, after the debounce period, when manifests may have changed. It
// is buffered (1): a change arriving while one is pending is merged into it.
func (s *Source) Changes() <-chan struct{} { return s.changes }

// Start watches the folder and its subfolders (also those created later) until ctx ends or
// Close is called. The watcher goroutine is owned by the source and waited for by Close.
func (s *Source) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return fmt.Errorf("dir source %q: start after close", s.cfg.Name)
	case s.started:
		return fmt.Errorf("dir source %q: already started", s.cfg.Name)
	}
	// A clock probe left by a process that ended between writing and removing it.
	if left, err := filepath.Glob(filepath.Join(s.root, sources.ClockProbePrefix+"*")); err == nil {
		for _, p := range left {
			_ = os.Remove(p)
		}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("dir source %q: watch: %w", s.cfg.Name, err)
	}
	l := &loop{src: s, w: w, dirs: map[string]bool{}}
	if _, err := l.addTree(s.root); err != nil {
		_ = w.Close()
		return fmt.Errorf("dir source %q: watch %s: %w", s.cfg.Name, s.root, err)
	}
	s.logger.Debug("watching", "dirs", len(l.dirs))
	ctx, cancel := context.WithCancel(ctx)
	s.started, s.cancel, s.done, s.watcher = true, cancel, make(chan struct{}), w
	go func() {
		defer close(s.done)
		l.run(ctx)
	}()
	return nil
}

// Close stops the watcher and waits for its goroutine. It is safe to call twice and
// without Start.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cancel, done, w := s.cancel, s.done, s.watcher
	s.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	if err := w.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("dir source %q: close watcher: %w", s.cfg.Name, err)
	}
	return nil
}

// notify announces a change without blocking: a pending value already says it.
func (s *Source) notify() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

var (
	_ sources.Source   = (*Source)(nil)
	_ sources.Starter  = (*Source)(nil)
	_ sources.Notifier = (*Source)(nil)

	_ sources.PartialFetcher = (*Source)(nil)
)
