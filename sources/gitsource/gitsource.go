// Package gitsource owns the Git kind of manifests source (DESIGN §2, §13): it learns the
// remote head with one ls-remote on in-memory storage, fetches a revision as a shallow,
// single-ref clone into a private mirror folder, and reads the manifest files straight from
// the commit's tree (no worktree), reusing the data of blobs that did not change since the
// previous snapshot.
//
// Credentials never reach errors or logs: URLs are shown through Redact, the URL handed to
// go-git carries no userinfo, and every returned error is scrubbed of the configured
// secrets and of the token (Auth.TokenFunc) its operation used.
//
// Hidden entries (a path component starting with ".", such as .github/ or .gitlab-ci.yml)
// are not manifests, as in dirsource: CI files are YAML but not trueup documents.
//
// The Data slices of a returned Snapshot are shared with the source's cache and with later
// snapshots: treat them as read-only.
package gitsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/trueup-dev/trueup/internal/plaintext"
	"github.com/trueup-dev/trueup/sources"
)

// Auth holds the credentials of a Git source. Username/Password (or a token as Password) are
// HTTPS basic auth; SSHKeyFile (+ passphrase) and KnownHostsFile are for ssh URLs.
type Auth struct {
	Username, Password string
	SSHKeyFile         string
	SSHKeyPassphrase   string
	KnownHostsFile     string
	// TokenFunc, for https URLs, yields the password of basic auth as user "x-access-token"
	// (a GitHub App installation token, see internal/forge/githubapi). It is called for every
	// ls-remote and fetch, so a renewed token is used as soon as it is issued, and must be
	// safe for concurrent use. It excludes the other fields and credentials in the URL.
	TokenFunc func(ctx context.Context) (string, error)
}

// Config configures one Git source.
type Config struct {
	// Name is the source name, for logs.
	Name string
	// URL is https://, http://, ssh://, git@host:org/repo, file:// or a local path.
	URL string
	// Insecure allows credentials over an http:// URL to a host other than this machine
	// (see internal/plaintext); without it New refuses the combination.
	Insecure bool
	// Branch, Tag and Commit select the revision; at most one may be set, none means branch
	// "main". Commit must be a full 40-character SHA-1.
	Branch, Tag, Commit string
	// Path is the subdirectory holding manifests; "" is the whole repository.
	Path string
	Auth Auth
	// Dir is a private folder for this source's mirror (dataDir/git/<name>). New does not
	// touch it: the first operation that needs it creates it (see prepare).
	Dir string
	// Timeout bounds every network operation: one ls-remote, one fetch (each of the two
	// fetches of a commit fallback), including getting a token. 0 means DefaultTimeout.
	// trueup serve sets it to 2/3 of reconcile.leaseTTL so that a hung server fails the sync
	// with a clear error well before the source's lease would expire.
	Timeout time.Duration
	// AllFiles reads every regular file under Path, not only manifests (sources.Env.AllFiles).
	AllFiles bool
}

// DefaultTimeout is Config.Timeout when unset: 2/3 of the default 15 s lease TTL, ample for
// an ls-remote (milliseconds) and for a shallow fetch of a manifests repository.
const DefaultTimeout = 10 * time.Second

// Source is a Git manifests source. Its methods may be called from several goroutines;
// fetches are serialised.
type Source struct {
	cfg      Config
	logger   *slog.Logger
	url      string // credential-free URL handed to go-git
	redacted string // for errors and logs
	refName  plumbing.ReferenceName
	commit   plumbing.Hash // set when cfg.Commit is
	subdir   string        // cleaned cfg.Path, "" for the whole repository
	auth     transport.AuthMethod
	secrets  scrubber
	fetches  atomic.Int64
	closed   atomic.Bool
	// limits caps a snapshot read with cfg.AllFiles (zero: the sources defaults).
	limits sources.SnapshotLimits

	prepared sync.Once
	dirErr   error // of prepare

	mu        sync.Mutex // serialises Fetch and Close; guards the fields below
	mirror    *git.Repository
	mirrorSto *filesystem.Storage
	blobs     map[plumbing.Hash][]byte // data of the last snapshot's files, by blob hash
	last      *sources.Snapshot        // the last snapshot, served again for its revision
}

var errClosed = errors.New("source is closed")

// New validates cfg. It does no network I/O and writes nothing: cfg.Dir is created (and
// cleaned of a crash's leftovers) by the first operation that needs it, so that a source may
// be built to check a config, or by a reload, while another instance of the same folder runs.
// An ssh key file and a known_hosts file are read here so that a bad path fails at start.
func New(cfg Config, logger *slog.Logger) (*Source, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("git source %q: timeout %s is negative", cfg.Name, cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	s := &Source{cfg: cfg, redacted: Redact(cfg.URL)}
	s.secrets = scrubber{cfg.Auth.Password, cfg.Auth.SSHKeyPassphrase}
	fail := func(format string, args ...any) (*Source, error) {
		return nil, s.secrets.wrap(fmt.Errorf("git source %q: "+format, append([]any{cfg.Name}, args...)...))
	}

	if strings.TrimSpace(cfg.URL) == "" {
		return fail("url is required")
	}
	ep, err := transport.NewEndpoint(cfg.URL)
	if err != nil {
		// The parser's message quotes the URL; do not wrap it.
		return fail("invalid url %s", s.redacted)
	}
	switch ep.Protocol {
	case "http", "https", "ssh", "file", "git":
	default:
		return fail("url %s: unsupported protocol %q", s.redacted, ep.Protocol)
	}
	s.secrets = append(s.secrets, ep.Password)
	if (ep.Protocol == "http" || ep.Protocol == "https") && ep.User != "" && ep.Password == "" {
		s.secrets = append(s.secrets, ep.User) // a token in the user position
	}
	s.url = cfg.URL
	if ep.Protocol == "http" || ep.Protocol == "https" {
		u, err := url.Parse(cfg.URL)
		if err != nil {
			return fail("invalid url %s", s.redacted)
		}
		u.User = nil
		s.url = u.String()
	}

	if s.auth, err = buildAuth(ep, cfg.Auth); err != nil {
		return fail("url %s: %w", s.redacted, err)
	}
	// After buildAuth, which already refuses credentials on git:// URLs.
	hasCred := s.auth != nil || cfg.Auth.TokenFunc != nil
	if err := plaintext.Check("url", ep.Protocol, ep.Host, "the credentials", hasCred, cfg.Insecure); err != nil {
		return fail("%w", err)
	}

	set := 0
	for _, v := range []string{cfg.Branch, cfg.Tag, cfg.Commit} {
		if v != "" {
			set++
		}
	}
	switch {
	case set > 1:
		return fail("set at most one of branch, tag and commit")
	case cfg.Commit != "":
		if !plumbing.IsHash(cfg.Commit) {
			return fail("commit %q is not a full 40-character SHA-1", cfg.Commit)
		}
		s.commit = plumbing.NewHash(cfg.Commit)
	case cfg.Tag != "":
		s.refName = plumbing.NewTagReferenceName(cfg.Tag)
	default:
		if cfg.Branch == "" {
			s.cfg.Branch = "main"
		}
		s.refName = plumbing.NewBranchReferenceName(s.cfg.Branch)
	}
	if s.refName != "" {
		if err := s.refName.Validate(); err != nil {
			return fail("invalid %s: %w", s.refDesc(), err)
		}
	}

	if s.subdir, err = cleanSubdir(cfg.Path); err != nil {
		return fail("%w", err)
	}

	if cfg.Dir == "" {
		return fail("dir is required")
	}

	s.logger = logger.With("source", cfg.Name, "url", s.redacted)
	return s, nil
}

// usedDirs are the folders a Source of this process has used (prepare): only the first use
// of a folder in a process removes what it holds besides the mirror. A later instance of the
// same folder (a source changed by a config reload) must not: an earlier instance's preview
// may still be reading a ref- scratch repository, which its Close does not wait for. The
// leftovers it would clean are a crash's, so they exist only before the first use.
var usedDirs sync.Map // absolute folder → struct{}

// prepare creates cfg.Dir and, at the first use of that folder in this process, removes the
// leftovers of a fetch or FetchRef interrupted by a crash. It runs once per Source, before
// the first operation that writes into the folder.
func (s *Source) prepare(ctx context.Context) error {
	s.prepared.Do(func() {
		if err := os.MkdirAll(s.cfg.Dir, 0o700); err != nil {
			s.dirErr = fmt.Errorf("create dir: %w", err)
			return
		}
		key, err := filepath.Abs(s.cfg.Dir)
		if err != nil {
			key = filepath.Clean(s.cfg.Dir)
		}
		if _, used := usedDirs.LoadOrStore(key, struct{}{}); !used {
			removeStale(s.cfg.Dir)
			removeRefScratch(s.cfg.Dir)
		}
	})
	if s.dirErr != nil {
		return s.errorf(ctx, "fetch", s.dirErr)
	}
	return nil
}

func cleanSubdir(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	clean := path.Clean(strings.ReplaceAll(p, "\\", "/"))
	switch {
	case path.IsAbs(clean):
		return "", fmt.Errorf("path %q must be relative to the repository root", p)
	case clean == "..", strings.HasPrefix(clean, "../"):
		return "", fmt.Errorf("path %q leaves the repository", p)
	case clean == ".":
		return "", nil
	}
	return clean, nil
}

// refDesc names the configured revision for messages: "branch main", "tag v1", "commit abc…".
func (s *Source) refDesc() string {
	switch {
	case s.cfg.Commit != "":
		return "commit " + s.commit.String()
	case s.cfg.Tag != "":
		return "tag " + s.cfg.Tag
	}
	return "branch " + s.cfg.Branch
}

// errorf builds an error naming the operation, the ref and the redacted URL ("ls-remote
// branch main at https://host/x.git: …"), scrubbed of secrets. When ctx is done its cause is
// wrapped instead of whatever the transport made of the cancellation, so callers can test
// errors.Is(err, context.Canceled) or errors.Is(err, context.DeadlineExceeded), and a
// timeout of the operation itself reads "no answer within 10s".
func (s *Source) errorf(ctx context.Context, op string, err error) error {
	return s.errorfOf(ctx, op, s.refDesc(), err)
}

// errorfOf is errorf naming desc instead of the configured ref.
func (s *Source) errorfOf(ctx context.Context, op, desc string, err error) error {
	if ctx != nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return s.secrets.wrap(fmt.Errorf("%s %s at %s: %w", op, desc, s.redacted, err))
}

// Head returns the commit the configured ref points at on the remote (annotated tags are
// peeled), with one ls-remote on in-memory storage. For a configured commit it returns that
// commit without network I/O.
func (s *Source) Head(ctx context.Context) (string, error) {
	if s.closed.Load() {
		return "", s.errorf(ctx, "ls-remote", errClosed)
	}
	if s.refName == "" {
		return s.commit.String(), nil
	}
	if err := ctx.Err(); err != nil {
		return "", s.errorf(ctx, "ls-remote", err)
	}
	ctx, cancel := s.withTimeout(ctx)
	defer cancel()
	auth, token, err := s.authFor(ctx)
	if err != nil {
		return "", s.errorf(ctx, "ls-remote", err)
	}
	remote := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{
		Name: git.DefaultRemoteName,
		URLs: []string{s.url},
	})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		err = token.wrap(err)
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return "", s.secrets.wrap(fmt.Errorf("%s not found at %s: %w", s.refDesc(), s.redacted, err))
		}
		return "", s.errorf(ctx, "ls-remote", err)
	}
	var direct, peeled plumbing.Hash
	peeledName := s.refName.String() + "^{}"
	for _, ref := range refs {
		switch ref.Name().String() {
		case s.refName.String():
			direct = ref.Hash()
		case peeledName:
			peeled = ref.Hash()
		}
	}
	if !peeled.IsZero() {
		direct = peeled
	}
	if !direct.IsZero() {
		s.logger.Debug("head", "ref", s.refDesc(), "revision", direct.String())
		return direct.String(), nil
	}
	return "", s.secrets.wrap(fmt.Errorf("%s not found at %s", s.refDesc(), s.redacted))
}

// withTimeout bounds one network operation by the configured timeout. A hung server (one that
// accepts the connection and never answers) then fails the operation with an error naming
// the URL instead of holding the sync forever.
func (s *Source) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, s.cfg.Timeout,
		fmt.Errorf("no answer within %s: %w", s.cfg.Timeout, context.DeadlineExceeded))
}

// authFor returns the auth method of one network operation, and the scrubber of the token
// it carries for that operation's errors (nil without a TokenFunc).
func (s *Source) authFor(ctx context.Context) (transport.AuthMethod, scrubber, error) {
	if s.cfg.Auth.TokenFunc == nil {
		return s.auth, nil, nil
	}
	tok, err := s.cfg.Auth.TokenFunc(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("get token: %w", err)
	}
	if tok == "" {
		return nil, nil, errors.New("get token: the token source returned an empty token")
	}
	return &githttp.BasicAuth{Username: defaultTokenUser, Password: tok}, scrubber{tok}, nil
}

// Fetches reports how many network fetches (clone attempts) the source has made.
func (s *Source) Fetches() int64 { return s.fetches.Load() }

// Close releases the mirror's files. The mirror stays on disk so that a restart can serve
// the revision it holds without a clone. Close is safe to call twice.
func (s *Source) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeMirror()
	s.blobs, s.last = nil, nil
	return nil
}

func (s *Source) closeMirror() {
	if s.mirrorSto != nil {
		_ = s.mirrorSto.Close()
	}
	s.mirror, s.mirrorSto = nil, nil
}

var _ sources.Source = (*Source)(nil)
