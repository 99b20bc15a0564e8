// Package config owns the controller configuration file (DESIGN §5): strict decoding with
// line numbers, ${VAR} expansion from the environment, defaults, the TRUEUP_DATABASE_URL
// override, and validation. Only this package and cmd/ read the environment.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/internal/changewindow"
	"github.com/trueup-dev/trueup/internal/envvar"
	"github.com/trueup-dev/trueup/internal/plaintext"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/dirsource"
	"github.com/trueup-dev/trueup/sources/gitsource"
	"github.com/trueup-dev/trueup/sources/ocisource"
)

// Config is the controller configuration file that `trueup serve --config` reads. Unknown
// keys are errors that name their line.
type Config struct {
	// Database says where PostgreSQL is.
	Database Database `yaml:"database"`
	// DataDir holds the Git mirrors and, without database.url, the private PostgreSQL
	// cluster; relative to the config file's folder (serve --data-dir overrides it).
	DataDir string `yaml:"dataDir"`
	// Server is the HTTP listener of the API, the dashboard and the webhooks.
	Server Server `yaml:"server"`
	// Sources are where manifests come from.
	Sources []Source `yaml:"sources"`
	// Actions are the action plugin instances that resource types name.
	Actions []Action `yaml:"actions"`
	// Reconcile tunes the workers, resync, retries and leases.
	Reconcile Reconcile `yaml:"reconcile"`
	// Retention bounds the history, events and notifications kept in the database.
	Retention Retention `yaml:"retention"`
	// Log sets the level and format of the logs on standard error.
	Log Log `yaml:"log"`
	// Limits caps the size of one revision of a source.
	Limits Limits `yaml:"limits"`
	// Auth says who may use the API and the dashboard (optional: without it every caller is
	// an admin, and only a loopback listen is allowed).
	Auth *Auth `yaml:"auth"`
	// Notifications tells people about failures and recoveries (optional: without it
	// nothing is sent).
	Notifications *Notifications `yaml:"notifications"`
	// Tracing exports OpenTelemetry spans (optional: without it no span is exported).
	Tracing   *Tracing          `yaml:"tracing"`
	BaseDir   string            `yaml:"-"` // folder of the config file; relative paths resolve against it
	secrets   map[string]int    // expanded values that came from the environment
	resyncSet bool              // reconcile.resyncInterval was written (0 then means off)
	fileSums  map[string]string // content of the files each source or action names (ReadFiles), for Diff

	// SecretStores is the secrets block: the stores that secretRef values in specs resolve
	// from, and which names each source and namespace may use.
	SecretStores Secrets `yaml:"secrets"` // not named Secrets: that is the method listing values to scrub
	// References grants references across namespaces (none: every reference stays in its
	// namespace).
	References References `yaml:"references"`
	// Policies decide, for a change of a resource they select, whether it is allowed, denied
	// or needs approvals. Their rules are compiled when the file is read: `trueup config
	// check` and a reload refuse a rule that does not compile, naming the policy and the
	// rule's line and column. A reload puts a changed list in effect without a restart.
	Policies []policy.Policy `yaml:"policies"`
	// ApprovalTTL is how long an approval asked for by a requireApproval policy stays valid
	// once given (default 24h).
	ApprovalTTL time.Duration `yaml:"approvalTTL"`
	policySet   *policy.Set   // Policies compiled (Validate)
	// Windows say when the resources they select may change: a deny window holds their
	// changes (applies, deletes, drift corrections) while open, allow windows let them change
	// only while one of them is open. A reload puts a changed list in effect without a
	// restart.
	Windows   []changewindow.Window `yaml:"windows"`
	windowSet *changewindow.Set     // Windows compiled (Validate)
}

// Database says where PostgreSQL is.
type Database struct {
	// URL is a PostgreSQL connection URL (postgres://user:password@host:5432/db), normally a
	// ${VAR}; the environment variable TRUEUP_DATABASE_URL overrides it. Empty: trueup starts
	// a private cluster under dataDir.
	URL string `yaml:"url"`
	// SessionURL reaches the same database as the same role directly when url goes through a
	// pooler in transaction mode (PgBouncer's pool_mode=transaction): the replica's LISTEN
	// connection and its liveness session (an advisory lock held for its lifetime) connect
	// here, and actions get it as their database URL; everything else goes through url. The
	// variable TRUEUP_DATABASE_SESSION_URL overrides it. Without it, serve refuses a url that
	// goes through such a pooler; with it, serve refuses a session URL that reaches another
	// database or role than url.
	SessionURL string `yaml:"sessionURL"`
	// ReadURL is a streaming standby of that database (a connection URL, normally a ${VAR};
	// TRUEUP_DATABASE_READ_URL overrides it). The API, the dashboard and MCP read through it;
	// writes, NOTIFY and the watch stream stay on url. Empty: everything goes to url.
	ReadURL string `yaml:"readURL"`
	// MaxReadLag is the replication lag past which reads go to url until the standby's lag is
	// under half of it again (default 10s).
	MaxReadLag time.Duration `yaml:"maxReadLag"`
}

// Server is the HTTP listener, and the process's memory.
type Server struct {
	// Listen is the address the API, the dashboard and the webhooks are served on
	// (host:port). Without auth, only a loopback address is allowed.
	Listen string `yaml:"listen"`
	// ExternalURL is how people reach the dashboard (commit status links); default http://<listen>/.
	ExternalURL string `yaml:"externalURL"`
	// MemoryLimit is the Go runtime's soft memory limit: auto (the default: a share of the
	// container's memory limit; without one, 128MiB or the live heap and half of it again
	// when that is more), off, or a size such as 512MiB. GOMEMLIMIT, when set, wins.
	MemoryLimit MemoryLimit `yaml:"memoryLimit"`
	// TLS serves HTTPS with this certificate and key (optional).
	TLS *TLS `yaml:"tls"`
	// MCP serves the Model Context Protocol at /mcp (streamable HTTP; default false): tools
	// for assistants over the API, with its authentication and scoping.
	MCP bool `yaml:"mcp"`
	// MCPOperatorTools adds the tools that change things to /mcp (reconcile, suspend,
	// resume, sync, approve; default false); the API refuses them to callers who are not
	// operators in the namespace.
	MCPOperatorTools bool `yaml:"mcpOperatorTools"`
}

// Source is one manifests source: exactly one of git, dir and oci.
type Source struct {
	// Name identifies the source (a DNS label: lowercase letters, digits and '-'); it is
	// unique, and the webhook path /hooks/NAME uses it.
	Name string `yaml:"name"`
	// Git reads manifests from a Git repository.
	Git *gitsource.Spec `yaml:"git"`
	// Dir reads manifests from a local folder (development).
	Dir *dirsource.Spec `yaml:"dir"`
	// OCI reads manifests from an OCI artifact in a container registry.
	OCI *ocisource.Spec `yaml:"oci"`
	// Webhook accepts push webhooks at POST /hooks/NAME, so that a push syncs at once
	// (optional).
	Webhook *Webhook `yaml:"webhook"`
	// Prune says whether removing a manifest deletes its resource (default true).
	Prune Prune `yaml:"prune"`
	// CommitStatus posts trueup/<source> statuses on the forge's commits (optional).
	CommitStatus *CommitStatus `yaml:"commitStatus"`
	// Decryption holds the keys of the source's SOPS-encrypted manifests (optional).
	Decryption *Decryption `yaml:"decryption"`
	// Preview previews the source's pull (merge) requests (optional).
	Preview *Preview `yaml:"preview"`
	// Render renders the source's files with kustomize before they are read (optional).
	Render *Render `yaml:"render"`
}

// Preview turns pull-request previews on for a source: its webhook then also accepts
// pull-request events, and the result goes to the repository its commitStatus names.
type Preview struct {
	// Enabled turns previews on; it needs a git source, its webhook and commitStatus.
	Enabled bool `yaml:"enabled"`
	// PlanTimeout bounds each action's plan (default 60s).
	PlanTimeout time.Duration `yaml:"planTimeout"`
	// PlanConcurrency bounds the plans of one preview run at once (default 4).
	PlanConcurrency int `yaml:"planConcurrency"`
	// ResolveOutputs says which pull requests' plans see output references resolved:
	// sameRepository (default: those from a branch of the repository, not from forks),
	// always, or never. Resolved values are scrubbed from what a plan returns either way.
	ResolveOutputs string `yaml:"resolveOutputs"`
	// ForkPlans lets pull requests from forks be planned by github-actions and gitlab
	// instances and by terraform instances with a repository module and pullRequestModules
	// (default false): such a plan runs the base repository's workflow or pipeline, with its
	// secrets, on the fork's spec, or the fork's module on the controller.
	ForkPlans bool `yaml:"forkPlans"`
}

// Preview defaults, and the values of Preview.ResolveOutputs.
const (
	DefaultPlanTimeout     = 60 * time.Second
	DefaultPlanConcurrency = 4

	ResolveSameRepository = "sameRepository"
	ResolveAlways         = "always"
	ResolveNever          = "never"
)

// Spec is the source's kind block (git, dir or oci), nil when it has none.
func (s Source) Spec() sources.Spec {
	if sp := s.Specs(); len(sp) > 0 {
		return sp[0]
	}
	return nil
}

// Specs is every kind block the source sets: one in a valid config, several when they are
// set together (defaulted and validated each, so that every error shows).
func (s Source) Specs() []sources.Spec {
	var out []sources.Spec
	if s.Git != nil {
		out = append(out, s.Git)
	}
	if s.Dir != nil {
		out = append(out, s.Dir)
	}
	if s.OCI != nil {
		out = append(out, s.OCI)
	}
	return out
}

// PreviewEnabled reports whether the source previews pull requests.
func (s Source) PreviewEnabled() bool { return s.Preview != nil && s.Preview.Enabled }

// CommitStatus says where to post commit statuses.
type CommitStatus struct {
	Provider string `yaml:"provider"` // one of github, gitlab, gitea
	// Token is the forge's API token (normally a ${VAR}).
	Token   string `yaml:"token"`
	BaseURL string `yaml:"baseURL"` // default https://api.github.com/ or https://gitlab.com/; gitea: https://host/api/v1/ (required)
	Repo    string `yaml:"repo"`    // owner/repo (github, gitea), or the project path or id (gitlab)
	// Insecure allows the token over an http:// baseURL to another machine.
	Insecure bool `yaml:"insecure"`
}

// Prune says whether removed manifests delete their resources: `prune: true|false`, or
// `prune: {enabled: true, maxFraction: 0.5, allowEmpty: false}`.
type Prune struct {
	Enabled *bool `yaml:"enabled"` // default true
	// MaxFraction refuses to delete more than this share of the source's resources in one
	// revision that still renders resources (default 0.5; 1 turns the guard off).
	MaxFraction float64 `yaml:"maxFraction"`
	// AllowEmpty lets a revision that renders no resources delete every resource of the
	// source (Argo CD's name), provided it still holds a manifest file (an empty .yaml): a
	// snapshot without any manifest file never prunes. Without it such a revision deletes
	// nothing and the source shows PruneSkipped. It is the consent to that one case:
	// maxFraction, which such a revision always exceeds, does not apply to it.
	AllowEmpty bool `yaml:"allowEmpty"`
}

// UnmarshalYAML accepts a bool or a mapping.
func (p *Prune) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var b bool
		if err := n.Decode(&b); err != nil {
			return fmt.Errorf("line %d: prune must be true, false or {enabled, maxFraction, allowEmpty}", n.Line)
		}
		p.Enabled = &b
		return nil
	}
	type plain Prune
	return decodeStrict(n, (*plain)(p), "Prune")
}

// PruneEnabled reports whether removed manifests delete their resources.
func (s Source) PruneEnabled() bool { return s.Prune.Enabled == nil || *s.Prune.Enabled }

// Webhook configures POST /hooks/{source}.
type Webhook struct {
	// Secret checks each request: GitHub and Gitea sign the body with it (X-Hub-Signature-256),
	// GitLab sends it (X-Gitlab-Token), other senders sign (X-Trueup-Signature-256) or send
	// it as a bearer token. Required; normally a ${VAR}.
	Secret string `yaml:"secret"`
}

// Action is a named action plugin instance; its config is handed to the plugin's factory
// as JSON.
type Action struct {
	// Name is how resource types name the instance; unique.
	Name string `yaml:"name"`
	// Type is the plugin: exec, github-actions, gitlab, http, terraform or noop.
	Type string `yaml:"type"`
	// Config is the plugin's own configuration, checked by the plugin (unknown keys are
	// errors); see the action reference.
	Config json.RawMessage `yaml:"-"`
	raw    yaml.Node
}

// UnmarshalYAML keeps the plugin's config as a node; it is decoded by the plugin.
func (a *Action) UnmarshalYAML(n *yaml.Node) error {
	var aux struct {
		Name   string    `yaml:"name"`
		Type   string    `yaml:"type"`
		Config yaml.Node `yaml:"config"`
	}
	if err := decodeStrict(n, &aux, "Action"); err != nil {
		return err
	}
	a.Name, a.Type, a.raw = aux.Name, aux.Type, aux.Config
	return nil
}

// Reconcile tunes the reconcile controller.
type Reconcile struct {
	// Workers is how many reconciles this replica runs at once (1 to 1024).
	Workers int `yaml:"workers"`
	// ResyncInterval reconciles Ready resources again after this long to find drift (a
	// type's own resyncInterval wins; 0 turns resync off).
	ResyncInterval time.Duration `yaml:"resyncInterval"`
	// Backoff is the delay before a failed reconcile is tried again.
	Backoff Backoff `yaml:"backoff"`
	// LeaseTTL is how long the reconcile, source and maintenance leases last without
	// renewal (at least 1s); they are renewed every third of it.
	LeaseTTL time.Duration `yaml:"leaseTTL"`
}

// Backoff is the retry delay after failures: initial, doubling up to max, with jitter.
type Backoff struct {
	Initial time.Duration `yaml:"initial"` // the delay after the first failure
	Max     time.Duration `yaml:"max"`     // the longest delay; not below initial
}

// Retention bounds what history and events keep; the maintenance loop enforces it.
type Retention struct {
	// History bounds the reconcile attempts kept per resource; its maxAge also bounds the
	// revisions recorded with their commit's author (for policies) that no resource, approval
	// request or source names any more.
	History RetentionRule `yaml:"history"`
	// Events bounds the events kept.
	Events RetentionRule `yaml:"events"`
	// Notifications: how long finished notifications stay in the outbox.
	Notifications OutboxRetention `yaml:"notifications"`
}

// OutboxRetention is how long sent and dead notifications are kept after they finished
// (defaults 7 and 30 days).
type OutboxRetention struct {
	Sent time.Duration `yaml:"sent"` // delivered notifications
	Dead time.Duration `yaml:"dead"` // notifications given up after maxAttempts
}

// RetentionRule drops rows older than maxAge, and beyond maxPerResource per resource.
type RetentionRule struct {
	MaxAge         time.Duration `yaml:"maxAge"`         // rows older than this are dropped
	MaxPerResource int           `yaml:"maxPerResource"` // only the newest this many per resource are kept
}

// Limits caps what one revision of a source may hold; a revision over a cap is rejected
// (nothing of it applied). Zero takes the default. The size of one file (1 MiB) and of one
// decoded document (1 MiB, YAML aliases expanded) are fixed.
type Limits struct {
	MaxFiles     int `yaml:"maxFiles"`     // manifest files per revision (default 200000)
	MaxDocuments int `yaml:"maxDocuments"` // YAML documents per revision (default 250000)
	MaxResources int `yaml:"maxResources"` // resources per revision, generated ones included (default 200000)
	// MaxResourcesPerSet caps the resources one ResourceSet generates (default 10000).
	MaxResourcesPerSet int `yaml:"maxResourcesPerSet"`
}

// Log configures the logs trueup writes to standard error.
type Log struct {
	Level  string `yaml:"level"`  // one of debug, info, warn, error
	Format string `yaml:"format"` // one of text, json
}

// Defaults.
const (
	DefaultListen         = "127.0.0.1:8080"
	DefaultDataDir        = ".trueup"
	DefaultInterval       = sources.DefaultInterval
	DefaultWorkers        = 16
	DefaultResyncInterval = 10 * time.Minute
	DefaultBackoffInitial = 5 * time.Second
	DefaultBackoffMax     = time.Hour
	DefaultLeaseTTL       = 15 * time.Second
	DefaultMaxReadLag     = 10 * time.Second
	DefaultHistoryMaxAge  = 30 * 24 * time.Hour
	DefaultHistoryPerRes  = 100
	DefaultEventsMaxAge   = 7 * 24 * time.Hour
	DefaultEventsPerRes   = 100
	DefaultOutboxSent     = 7 * 24 * time.Hour
	DefaultOutboxDead     = 30 * 24 * time.Hour
	DefaultApprovalTTL    = 24 * time.Hour
)

// envOverrides are the environment variables that override database fields (not ${VAR}s of
// the file), each with the field it sets: unset means no override.
var envOverrides = []struct {
	name  string
	field func(*Database) *string
}{
	{"TRUEUP_DATABASE_URL", func(d *Database) *string { return &d.URL }},
	{"TRUEUP_DATABASE_SESSION_URL", func(d *Database) *string { return &d.SessionURL }},
	{"TRUEUP_DATABASE_READ_URL", func(d *Database) *string { return &d.ReadURL }},
}

// EnvOverrides are the names of the environment variables that override database fields.
var EnvOverrides = func() []string {
	out := make([]string, len(envOverrides))
	for i, o := range envOverrides {
		out[i] = o.name
	}
	return out
}()

// Env is where Load and Parse read the environment: Var expands the file's ${VAR}s, Override
// reads the database overrides (EnvOverrides), where "" means none. A reader that stands in for
// unset variables (to check a config's structure) gives stand-ins through Var only.
type Env struct {
	Var, Override func(string) string
}

// LenientEnv reads a config for its structure only: a ${VAR} unset in the process's
// environment stands in as unset-NAME (and is passed to unset, when given), while the
// database overrides are read as they are (unset means none).
func LenientEnv(unset func(name string)) Env {
	return Env{
		Var: func(k string) string {
			if v := os.Getenv(k); v != "" {
				return v
			}
			if unset != nil {
				unset(k)
			}
			return "unset-" + k
		},
		Override: os.Getenv,
	}
}

// Load reads, expands and validates the file at path. getenv is os.Getenv in production; it
// serves both ${VAR}s and the overrides.
func Load(path string, getenv func(string) string) (*Config, error) {
	return LoadEnv(path, Env{Var: getenv, Override: getenv})
}

// LoadEnv is Load with the two lookups apart.
func LoadEnv(path string, env Env) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseEnv(data, filepath.Dir(abs), env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse decodes config text; baseDir is where relative paths resolve. getenv serves both
// ${VAR}s and the overrides.
func Parse(data []byte, baseDir string, getenv func(string) string) (*Config, error) {
	return ParseEnv(data, baseDir, Env{Var: getenv, Override: getenv})
}

// ParseEnv is Parse with the two lookups apart.
func ParseEnv(data []byte, baseDir string, env Env) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, cleanYAMLError(err)
	}
	c := &Config{BaseDir: baseDir, secrets: map[string]int{}}
	if len(root.Content) == 0 {
		return nil, errors.New("config is empty")
	}
	// Unknown fields are checked on the text as written, so errors carry its line numbers.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&Config{}); err != nil {
		return nil, cleanYAMLError(err)
	}
	if err := expandNode(root.Content[0], env.Var, c.secrets); err != nil {
		return nil, err
	}
	if err := root.Content[0].Decode(c); err != nil {
		return nil, c.ScrubError(cleanYAMLError(err))
	}
	for i := range c.Actions {
		var v any
		if err := c.Actions[i].raw.Decode(&v); err != nil {
			return nil, c.ScrubError(fmt.Errorf("actions[%d].config: %w", i, err))
		}
		if v == nil {
			v = map[string]any{}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, c.ScrubError(fmt.Errorf("actions[%d].config: %w", i, err))
		}
		c.Actions[i].Config = b
	}
	for _, o := range envOverrides {
		if u := env.Override(o.name); u != "" {
			*o.field(&c.Database) = u
			c.secrets[u]++
		}
	}
	// resyncInterval: 0 turns resync off; only an absent key takes the default.
	c.resyncSet = hasKey(root.Content[0], "reconcile", "resyncInterval")
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		// Messages quote the offending values, which may have come from ${VAR}; the caller
		// gets no Config to scrub them with, so it is done here.
		return nil, c.ScrubError(err)
	}
	return c, nil
}

func (c *Config) applyDefaults() {
	if c.Notifications != nil {
		c.Notifications.applyDefaults()
	}
	if c.Tracing != nil {
		c.Tracing.applyDefaults()
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	c.DataDir = c.Path(c.DataDir)
	if c.Server.Listen == "" {
		c.Server.Listen = DefaultListen
	}
	if c.Server.ExternalURL == "" {
		c.Server.ExternalURL = "http://" + c.Server.Listen + "/"
		if c.Server.TLS != nil {
			c.Server.ExternalURL = "https://" + c.Server.Listen + "/"
		}
	}
	for i := range c.Sources {
		s := &c.Sources[i]
		for _, sp := range s.Specs() {
			sp.Defaults(c.Path)
		}
	}
	r := &c.Reconcile
	if r.Workers == 0 {
		r.Workers = DefaultWorkers
	}
	if r.ResyncInterval == 0 && !c.resyncSet {
		r.ResyncInterval = DefaultResyncInterval
	}
	if r.Backoff.Initial == 0 {
		r.Backoff.Initial = DefaultBackoffInitial
	}
	if r.Backoff.Max == 0 {
		r.Backoff.Max = DefaultBackoffMax
	}
	if r.LeaseTTL == 0 {
		r.LeaseTTL = DefaultLeaseTTL
	}
	if c.Database.MaxReadLag == 0 {
		c.Database.MaxReadLag = DefaultMaxReadLag
	}
	if c.Retention.History.MaxAge == 0 {
		c.Retention.History.MaxAge = DefaultHistoryMaxAge
	}
	if c.Retention.History.MaxPerResource == 0 {
		c.Retention.History.MaxPerResource = DefaultHistoryPerRes
	}
	if c.Retention.Events.MaxAge == 0 {
		c.Retention.Events.MaxAge = DefaultEventsMaxAge
	}
	if c.Retention.Events.MaxPerResource == 0 {
		c.Retention.Events.MaxPerResource = DefaultEventsPerRes
	}
	if c.Retention.Notifications.Sent == 0 {
		c.Retention.Notifications.Sent = DefaultOutboxSent
	}
	if c.Retention.Notifications.Dead == 0 {
		c.Retention.Notifications.Dead = DefaultOutboxDead
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
	if c.ApprovalTTL == 0 {
		c.ApprovalTTL = DefaultApprovalTTL
	}
}

// hasKey reports whether the mapping n has the nested key path.
func hasKey(n *yaml.Node, path ...string) bool {
	for _, k := range path {
		if n.Kind != yaml.MappingNode {
			return false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return true
}

// Path resolves p against the config file's folder.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.BaseDir, p)
}

var nameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate checks cross-field rules.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, l := range []struct {
		name string
		v    int
	}{{"maxFiles", c.Limits.MaxFiles}, {"maxDocuments", c.Limits.MaxDocuments}, {"maxResources", c.Limits.MaxResources}, {"maxResourcesPerSet", c.Limits.MaxResourcesPerSet}} {
		if l.v < 0 {
			bad("limits.%s: %d must not be negative (0 takes the default)", l.name, l.v)
		}
	}
	for _, r := range []struct {
		name string
		v    time.Duration
	}{{"sent", c.Retention.Notifications.Sent}, {"dead", c.Retention.Notifications.Dead}} {
		if r.v < 0 {
			bad("retention.notifications.%s: %s must not be negative (0 takes the default)", r.name, r.v)
		}
	}
	if c.Database.SessionURL != "" && c.Database.URL == "" {
		bad("database.sessionURL: set without database.url (the private cluster needs none)")
	}
	if c.Database.ReadURL != "" && c.Database.URL == "" {
		bad("database.readURL: set without database.url (the private cluster has no standby)")
	}
	if c.Server.MCPOperatorTools && !c.Server.MCP {
		bad("server.mcpOperatorTools: true needs server.mcp: true (the tools are served at /mcp)")
	}
	if c.Database.MaxReadLag < 0 {
		bad("database.maxReadLag: %s must not be negative (0 takes the default)", c.Database.MaxReadLag)
	}
	seen := map[string]bool{}
	for i, s := range c.Sources {
		at := fmt.Sprintf("sources[%d]", i)
		if !nameRe.MatchString(s.Name) {
			bad("%s.name: %q must be a DNS label (lowercase letters, digits and '-', at most 63)", at, s.Name)
		}
		if seen[s.Name] {
			bad("%s.name: source %q declared twice", at, s.Name)
		}
		seen[s.Name] = true
		switch n := len(s.Specs()); {
		case n == 0:
			bad("%s: one of git, dir or oci is required", at)
		case n > 1:
			bad("%s: git, dir and oci are exclusive (set one)", at)
		}
		for _, sp := range s.Specs() {
			if err := sp.Validate(at + "." + sp.Kind()); err != nil {
				errs = append(errs, err)
			}
		}
		if f := s.Prune.MaxFraction; f < 0 || f > 1 {
			bad("%s.prune.maxFraction: %v is outside 0..1", at, f)
		}
		if cs := s.CommitStatus; cs != nil {
			switch cs.Provider {
			case "github", "gitlab":
			case "gitea":
				if cs.BaseURL == "" {
					bad("%s.commitStatus.baseURL: required for gitea (https://host/api/v1/)", at)
				}
			default:
				bad("%s.commitStatus.provider: %q is not github, gitlab or gitea", at, cs.Provider)
			}
			if cs.Token == "" || cs.Repo == "" {
				bad("%s.commitStatus: token and repo are required", at)
			}
			if cs.BaseURL != "" {
				// Not quoted whole: it may hold a credential.
				u, err := url.Parse(cs.BaseURL)
				switch {
				case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
					bad("%s.commitStatus.baseURL: not an http(s) URL", at)
				case u.User != nil || u.RawQuery != "" || u.Fragment != "":
					bad("%s.commitStatus.baseURL: %s://%s%s may not carry credentials, a query or a fragment (the token goes in token)", at, u.Scheme, u.Host, u.Path)
				default:
					if err := plaintext.Check(at+".commitStatus.baseURL", u.Scheme, u.Hostname(), "the token", cs.Token != "", cs.Insecure); err != nil {
						bad("%w", err)
					}
				}
			}
		}
		if d := s.Decryption; d != nil {
			validateDecryption(at+".decryption", d, bad)
		}
		if r := s.Render; r != nil {
			validateRender(at+".render", r, bad)
		}
		if pv := s.Preview; pv != nil {
			switch {
			case pv.PlanTimeout < 0:
				bad("%s.preview.planTimeout: %s is negative", at, pv.PlanTimeout)
			case pv.PlanConcurrency < 0:
				bad("%s.preview.planConcurrency: %d is negative", at, pv.PlanConcurrency)
			}
			switch pv.ResolveOutputs {
			case "", ResolveSameRepository, ResolveAlways, ResolveNever:
			default:
				bad("%s.preview.resolveOutputs: %q is not %s, %s or %s", at, pv.ResolveOutputs, ResolveSameRepository, ResolveAlways, ResolveNever)
			}
			if pv.Enabled {
				// The PR's head is fetched from the source's repository, the events arrive on its
				// webhook, and the status and comment go to the repository commitStatus names.
				if s.Git == nil {
					bad("%s.preview: previews need a git source (pull-request refs are fetched from its repository)", at)
				}
				if s.Webhook == nil {
					bad("%s.preview: previews need the source's webhook (pull-request events arrive on /hooks/%s)", at, s.Name)
				}
				if s.CommitStatus == nil {
					bad("%s.preview: previews need commitStatus (its provider and repo name where the status and comment go)", at)
				}
			}
		}
		if s.Webhook != nil && s.Webhook.Secret == "" {
			bad("%s.webhook.secret: required when a webhook is configured (unsigned webhooks are refused)", at)
		}
	}
	seen = map[string]bool{}
	for i, a := range c.Actions {
		at := fmt.Sprintf("actions[%d]", i)
		if a.Name == "" {
			bad("%s.name: required", at)
		}
		if seen[a.Name] {
			bad("%s.name: action %q declared twice", at, a.Name)
		}
		seen[a.Name] = true
		if a.Type == "" {
			bad("%s.type: required", at)
		}
	}
	r := c.Reconcile
	if r.Workers < 1 || r.Workers > 1024 {
		bad("reconcile.workers: %d is outside 1..1024", r.Workers)
	}
	if r.Backoff.Initial > r.Backoff.Max {
		bad("reconcile.backoff: initial %s exceeds max %s", r.Backoff.Initial, r.Backoff.Max)
	}
	if r.LeaseTTL < time.Second {
		bad("reconcile.leaseTTL: %s is below 1s", r.LeaseTTL)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level: %q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		bad("log.format: %q is not one of text, json", c.Log.Format)
	}
	if c.ApprovalTTL < 0 {
		bad("approvalTTL: %s must not be negative (0 takes the default)", c.ApprovalTTL)
	}
	var err error
	if c.policySet, err = policy.Compile(c.Policies); err != nil {
		errs = append(errs, err)
	}
	if c.windowSet, err = changewindow.Compile(c.Windows); err != nil {
		errs = append(errs, err)
	}
	c.validateAuth(bad)
	c.validateTracing(bad)
	if c.Notifications != nil {
		c.Notifications.validate(bad)
	}
	errs = append(errs, c.prepareSecrets(), c.validateReferences())
	return errors.Join(errs...)
}

// PolicySet is the compiled policies (never nil once the config is loaded; empty without
// policies).
func (c *Config) PolicySet() *policy.Set { return c.policySet }

// WindowSet is the compiled change windows (nil before the config is validated; a Set
// without windows once it is).
func (c *Config) WindowSet() *changewindow.Set { return c.windowSet }

// ScrubError returns err with every value that came from the environment replaced by "***"
// in its message, in any escaping (redact.Error: err itself when there is none, nil for nil).
// Callers that build something from the config (plugins, sources, commit status reporters)
// pass their errors through it before printing or logging them: those messages quote config
// values, which may be ${VAR}s.
func (c *Config) ScrubError(err error) error {
	return redact.Error(err, redact.Replacer(c.Secrets()))
}

// Secrets returns every value that came from the environment through ${VAR} (and the
// database URL override), so that logs and errors can be scrubbed of them.
func (c *Config) Secrets() []string {
	out := make([]string, 0, len(c.secrets))
	for s := range c.secrets {
		if len(s) >= redact.MinLength {
			out = append(out, s)
		}
	}
	return out
}

// expandNode replaces ${VAR} in every scalar value (never in keys, and after parsing, so a
// value cannot change the document's structure). An unset variable is an error naming it.
func expandNode(n *yaml.Node, getenv func(string) string, secrets map[string]int) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return nil
		}
		var missing []string
		n.Value = envvar.Ref.ReplaceAllStringFunc(n.Value, func(m string) string {
			name := m[2 : len(m)-1]
			v := getenv(name)
			if v == "" {
				missing = append(missing, name)
			}
			secrets[v]++
			return v
		})
		if len(missing) > 0 {
			return fmt.Errorf("line %d: environment variable %s is not set", n.Line, strings.Join(missing, ", "))
		}
		// A value taken from the environment is always a string, whatever it looks like.
		n.Tag = "!!str"
		n.Style = yaml.DoubleQuotedStyle
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if err := expandNode(n.Content[i], getenv, secrets); err != nil {
				return err
			}
		}
	default:
		for _, c := range n.Content {
			if err := expandNode(c, getenv, secrets); err != nil {
				return err
			}
		}
	}
	return nil
}

func cleanYAMLError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	msg = strings.ReplaceAll(msg, " in type config.Config", "")
	msg = strings.ReplaceAll(msg, "type config.", "")
	msg = strings.ReplaceAll(msg, "type policy.", "")
	return errors.New(kindTypes.Replace(msg))
}

// kindTypes names the source kinds' blocks in yaml.v3's errors by their keys' words, as the
// blocks of this package are named: "type X" as the other blocks' types read once
// cleanYAMLError drops "type config.", a bare X (a wrong-type value: "into X") as config.X.
var kindTypes = strings.NewReplacer(
	"type gitsource.Spec", "Git", "type gitsource.AuthSpec", "GitAuth",
	"type gitsource.AppSpec", "GitHubApp", "type dirsource.Spec", "Dir",
	"gitsource.Spec", "config.Git", "gitsource.AuthSpec", "config.GitAuth",
	"gitsource.AppSpec", "config.GitHubApp", "dirsource.Spec", "config.Dir",
	"type ocisource.Spec", "OCI", "type ocisource.SecretRef", "OCISecretRef",
	"ocisource.Spec", "config.OCI", "ocisource.SecretRef", "config.OCISecretRef")
