package sources

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trueup-dev/trueup/internal/registry"
)

// DefaultInterval is how often a source is polled when its block does not say.
const DefaultInterval = time.Minute

// Spec is one source kind's block of the controller config (`git:`, `dir:`), decoded by the
// kind's own type: its yaml tags are the keys users write (unknown keys are refused with
// their line), and its methods fill the kind's defaults, check its fields and say what the
// host needs of it, so that the host reads none of its fields by convention.
type Spec interface {
	// Kind is the registry's name of the kind ("git", "dir").
	Kind() string
	// Defaults fills the defaults of unset fields; path resolves a path written in the
	// config against the config file's folder.
	Defaults(path func(string) string)
	// Validate checks the fields without side effects; at names the block in the errors
	// ("sources[0].git"), each error naming its field ("sources[0].git.url: required").
	Validate(at string) error
	// Info is what the host registers and shows of the source.
	Info() Info
	// Files are the files of the controller the source is built from (keys, known hosts),
	// absolute once Defaults has run: a reload rebuilds the source when one changes.
	Files() []string
}

// Info is what the host needs of a configured source besides the source itself.
type Info struct {
	// Interval is how often the host asks Head.
	Interval time.Duration
	// URL names the source in the API and the dashboard, credentials redacted.
	URL string
	// Ref is the revision the source follows as shown ("main", "tag:v1", "commit:<sha>"; ""
	// for a folder).
	Ref string
	// Branch is the branch the source follows, "" when it is pinned to a tag or a commit or
	// has no branches: a push webhook of another branch is not a change of the source.
	Branch string
	// Path is the folder of the manifests in the source's repository ("": its root, or the
	// source has no repository).
	Path string
}

// Env is what the host hands a kind's factory besides its spec.
type Env struct {
	// Name is the source's name.
	Name string
	// Dir is a private folder for this source's files (dataDir/<kind>/<name>); the kind
	// creates it when it needs it.
	Dir string
	// Timeout bounds one call to a remote (below the source lease's TTL, so that a hung
	// server fails the sync rather than outlasting the lease); 0: the kind's default.
	Timeout time.Duration
	Logger  *slog.Logger
	// AllFiles asks Fetch for every regular file under the path, not only manifests (a
	// renderer such as kustomize reads patches and generator inputs), within the same
	// per-file limit.
	AllFiles bool
}

// Factory builds a source from its kind's spec (a value of the kind's Spec type, defaults
// applied and validated). It does no I/O a check of the config must not do: nothing is
// fetched or written.
type Factory func(spec Spec, env Env) (Source, error)

// Registry maps source kinds ("git", "dir") to factories.
type Registry struct {
	kinds *registry.Kinds[Factory]
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: registry.New[Factory]("source kind")} }

// Register adds a kind; registering a kind twice is an error.
func (r *Registry) Register(kind string, f Factory) error { return r.kinds.Register(kind, f) }

// Kinds lists the registered kinds, sorted.
func (r *Registry) Kinds() []string { return r.kinds.Names() }

// New builds the source of spec with its kind's factory.
func (r *Registry) New(spec Spec, env Env) (Source, error) {
	if spec == nil {
		return nil, errors.New("no source kind configured")
	}
	f, ok := r.kinds.Get(spec.Kind())
	if !ok {
		return nil, fmt.Errorf("unknown source kind %q (known: %v)", spec.Kind(), r.Kinds())
	}
	return f(spec, env)
}
