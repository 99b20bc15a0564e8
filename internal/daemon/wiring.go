package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/execaction"
	"github.com/trueup-dev/trueup/actions/ghactions"
	"github.com/trueup-dev/trueup/actions/gitlab"
	"github.com/trueup-dev/trueup/actions/httpcall"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/actions/proc"
	"github.com/trueup-dev/trueup/actions/terraform"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/reconciler"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/secrets"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/tracing"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/dirsource"
	"github.com/trueup-dev/trueup/sources/gitsource"
	"github.com/trueup-dev/trueup/sources/ocisource"
)

// Registry wires every action plugin kind explicitly.
func Registry() (*actions.Registry, error) {
	r := actions.NewRegistry()
	for kind, f := range map[string]actions.Factory{
		"exec":           execaction.New,
		"noop":           noop.New,
		"github-actions": ghactions.New,
		"gitlab":         gitlab.New,
		"http":           httpcall.New,
		"terraform":      terraform.New,
	} {
		if err := r.Register(kind, f); err != nil {
			return nil, err
		}
	}
	// The kinds whose config names files they read once (exec's command and terraform's
	// module are read at each call: a change reaches the next call without a rebuild).
	if err := r.RegisterFiles("github-actions", ghactions.Files); err != nil {
		return nil, err
	}
	return r, nil
}

// NewLogger is the daemon's and the CLI's logger of cfg's log block, writing to w.
func NewLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	// Lines logged with a traced context name its trace (trace_id, span_id).
	return slog.New(tracing.LogHandler(h))
}

// traceURL is the dashboard's link to a trace, {traceId} in it ("": none).
func traceURL(cfg *config.Config) string {
	if cfg.Tracing == nil {
		return ""
	}
	return cfg.Tracing.TraceURL
}

// SourceRegistry wires every source kind explicitly.
func SourceRegistry() (*sources.Registry, error) {
	r := sources.NewRegistry()
	for kind, f := range map[string]sources.Factory{
		gitsource.Kind: gitsource.Open,
		dirsource.Kind: dirsource.Open,
		ocisource.Kind: ocisource.Open,
	} {
		if err := r.Register(kind, f); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// NewSource builds s's source with its kind's factory in reg, and says what its kind reports
// of it.
func NewSource(reg *sources.Registry, cfg *config.Config, s config.Source, logger *slog.Logger) (sources.Source, sources.Info, error) {
	spec := s.Spec()
	if spec == nil {
		return nil, sources.Info{}, errors.New("no source kind configured")
	}
	src, err := reg.New(spec, sources.Env{Name: s.Name, Dir: filepath.Join(cfg.DataDir, spec.Kind(), s.Name), Logger: logger,
		// Below the source lease's TTL: a hung server fails the sync, it cannot outlast the lease.
		Timeout: cfg.Reconcile.LeaseTTL * 2 / 3,
		// A renderer reads kustomizations, patches and generator inputs besides manifests.
		AllFiles: s.Render != nil})
	return src, spec.Info(), err
}

// registration is what the database and the API know of source sc, info its kind's report.
func registration(sc config.Source, info sources.Info) store.SourceConfig {
	return store.SourceConfig{Name: sc.Name, URL: info.URL, Branch: info.Ref, Path: info.Path,
		Prune: &store.SourcePrune{Enabled: sc.PruneEnabled(), MaxFraction: sc.Prune.MaxFraction, AllowEmpty: sc.Prune.AllowEmpty}}
}

// NewActions instantiates every configured action; on error the ones built are closed.
// dbURL is actions.Env.DatabaseURL and trees actions.Env.ReadTree ("" and nil where no
// database or source is opened).
func NewActions(cfg *config.Config, reg *actions.Registry, logger *slog.Logger, dbURL string, trees func(ctx context.Context, source, revision, dir string) ([]sources.TreeFile, error)) (map[string]actions.Action, error) {
	out := map[string]actions.Action{}
	for _, a := range cfg.Actions {
		act, err := reg.New(a.Type, a.Config, actions.Env{Name: a.Name, BaseDir: cfg.BaseDir, Logger: logger.With("action", a.Name),
			DatabaseURL: dbURL, ReadTree: trees})
		if err != nil {
			CloseActions(out)
			return nil, err
		}
		out[a.Name] = act
	}
	return out, nil
}

// warnContainment says, once per daemon and only when one of acts runs commands, that the
// processes those commands start may outlive a killed trueup (proc.Mode), so that operators
// know when a kill -9 can leave work behind.
func (rt *Daemon) warnContainment(acts map[string]actions.Action) {
	for _, a := range acts {
		if r, ok := a.(actions.CommandRunner); ok && r.RunsCommands() {
			rt.containment.Do(func() {
				mode := proc.Mode
				if rt.test.mode != nil {
					mode = rt.test.mode
				}
				if mode, err := mode(); err != nil {
					rt.log.Warn("the processes that action commands start may outlive trueup if it is killed", "mode", mode, "reason", err)
				}
			})
			return
		}
	}
}

// CloseActions closes every instance of m.
func CloseActions(m map[string]actions.Action) {
	for _, a := range m {
		_ = actions.Close(a)
	}
}

// CheckAction validates a ResourceType's action reference at ingest.
func CheckAction(acts map[string]actions.Action) func(string, json.RawMessage) error {
	return func(name string, with json.RawMessage) error {
		a, ok := acts[name]
		if !ok {
			names := make([]string, 0, len(acts))
			for n := range acts {
				names = append(names, n)
			}
			return fmt.Errorf("action %q is not configured in this controller (configured: %s)", name, strings.Join(names, ", "))
		}
		if v, ok := a.(actions.WithValidator); ok {
			if err := v.ValidateWith(with); err != nil {
				if strings.HasPrefix(err.Error(), "with.") {
					return err // names its field already (with.ref: …)
				}
				return fmt.Errorf("with: %w", err)
			}
		}
		return nil
	}
}

// ReplicaName names this process among the replicas: host, PID and a random suffix.
func ReplicaName() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// SourceKeys reads each source's decryption keys (decryption.age).
func SourceKeys(cfg *config.Config) (map[string]*sealed.Keys, error) {
	out := map[string]*sealed.Keys{}
	for _, sc := range cfg.Sources {
		text, err := cfg.AgeKeyMaterial(sc)
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", sc.Name, err)
		}
		if text == "" {
			continue
		}
		k, err := sealed.ParseAgeKeys(text)
		if err != nil {
			return nil, fmt.Errorf("source %s: decryption.%w", sc.Name, err)
		}
		out[sc.Name] = k
	}
	return out, nil
}

// revealer puts a resource's secrets back into its spec for one action call: the
// SOPS-encrypted fields of its manifest, then the secretRef values its source and namespace
// may use.
func revealer(st *store.Store, keys map[string]*sealed.Keys, res *secrets.Resolver) reconciler.Reveal {
	files := sealed.NewRevealer(keys)
	return func(ctx context.Context, c store.Claimed) (json.RawMessage, []string, error) {
		spec, values := c.Spec, []string(nil)
		if c.SealedSHA != "" {
			var err error
			content := func() (string, error) { return st.SealedFile(ctx, c.SealedSHA) }
			if spec, values, err = files.RevealStored(c.Source, c.File, c.Kind, c.Namespace, c.Name, c.SealedSHA, content, spec); err != nil {
				return nil, nil, err
			}
		}
		spec, refs, err := res.Resolve(ctx, c.Source, c.Namespace, spec)
		if err != nil {
			// A reference may have been encrypted: its decrypted name must not reach the
			// resource's message.
			return nil, nil, actions.ScrubError(err, actions.Scrubber(values))
		}
		var keep []string
		for _, v := range append(values, refs...) {
			if sealed.Scrubbable(v) {
				keep = append(keep, v)
			}
		}
		return spec, keep, nil
	}
}
