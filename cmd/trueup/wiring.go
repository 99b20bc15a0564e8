package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/execaction"
	"github.com/trueup-dev/trueup/actions/ghactions"
	"github.com/trueup-dev/trueup/actions/gitlab"
	"github.com/trueup-dev/trueup/actions/httpcall"
	"github.com/trueup-dev/trueup/actions/noop"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/ghapp"
	"github.com/trueup-dev/trueup/internal/pgembed"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/dirsource"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

func getenv(k string) string { return os.Getenv(k) }

func loadConfig(path string) (*config.Config, error) {
	return config.Load(path, getenv)
}

// registry wires every action plugin kind explicitly.
func registry() (*actions.Registry, error) {
	r := actions.NewRegistry()
	for kind, f := range map[string]actions.Factory{
		"exec":           execaction.New,
		"noop":           noop.New,
		"github-actions": ghactions.New,
		"gitlab":         gitlab.New,
		"http":           httpcall.New,
	} {
		if err := r.Register(kind, f); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// scrubber replaces with "***" every secret the config took from the environment and every
// literal secret an action instance holds (actions.SecretHolder). Each secret is also
// replaced in its JSON-escaped form, since outputs are scrubbed as encoded JSON.
func scrubber(cfg *config.Config, acts map[string]actions.Action) func(string) string {
	secrets := cfg.Secrets()
	for _, a := range acts {
		if h, ok := a.(actions.SecretHolder); ok {
			secrets = append(secrets, h.Secrets()...)
		}
	}
	seen := map[string]bool{}
	var all []string
	for _, s := range secrets {
		b, _ := json.Marshal(s)
		for _, v := range []string{s, string(b[1 : len(b)-1])} {
			if v != "" && !seen[v] {
				seen[v] = true
				all = append(all, v)
			}
		}
	}
	if len(all) == 0 {
		return func(s string) string { return s }
	}
	// Longest first: a secret that contains another (a user name inside a token) must be
	// replaced whole, not leave its tail behind.
	sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s, "***")
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// scrubWriter is the log sink of serve and migrate: it removes secrets from every record
// before it reaches stderr, whichever package logged it and however the secret got into the
// message (a plugin's error quoting its config, a URL in a transport error). slog's handlers
// write each record with a single Write, so a secret is never split between two calls. The
// scrub function grows once the action instances, which hold literal secrets, are built.
type scrubWriter struct {
	w     io.Writer
	scrub atomic.Pointer[func(string) string]
}

func newScrubWriter(w io.Writer, scrub func(string) string) *scrubWriter {
	s := &scrubWriter{w: w}
	s.set(scrub)
	return s
}

func (s *scrubWriter) set(scrub func(string) string) { s.scrub.Store(&scrub) }

// current returns the scrub function in use, for errors that are printed rather than logged.
func (s *scrubWriter) current() func(string) string { return *s.scrub.Load() }

func (s *scrubWriter) Write(p []byte) (int, error) {
	msg := string(p)
	if clean := s.current()(msg); clean != msg {
		_, err := io.WriteString(s.w, clean)
		return len(p), err
	}
	return s.w.Write(p)
}

// database is the store plus, when database.url is empty, the private cluster behind it.
type database struct {
	store   *store.Store
	cluster *pgembed.Cluster
}

func (d *database) Close() {
	if d.store != nil {
		d.store.Close()
	}
	if d.cluster != nil {
		_ = d.cluster.Stop()
	}
}

func openDatabase(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*database, error) {
	d := &database{}
	url := cfg.Database.URL
	if url == "" {
		dir := filepath.Join(cfg.DataDir, "postgres")
		logger.Info("starting private PostgreSQL", "dir", dir)
		c, err := pgembed.Start(ctx, pgembed.Options{Dir: dir, Logger: logger.With("component", "postgres")})
		if err != nil {
			return nil, err
		}
		d.cluster = c
		url = c.URL("trueup")
	}
	st, err := store.Open(ctx, url, store.Options{MaxConns: int32(cfg.Reconcile.Workers + 8)})
	if err != nil {
		d.Close()
		return nil, err
	}
	d.store = st
	return d, nil
}

// newSource builds the configured source kind.
func newSource(cfg *config.Config, s config.Source, logger *slog.Logger) (sources.Source, store.SourceConfig, error) {
	switch {
	case s.Git != nil:
		g := s.Git
		gc := gitsource.Config{Name: s.Name, URL: g.URL, Insecure: g.Insecure, Branch: g.Branch, Tag: g.Tag, Commit: g.Commit, Path: g.Path,
			Dir: filepath.Join(cfg.DataDir, "git", s.Name),
			// Below the source lease's TTL: a hung server fails the sync, it cannot outlast the lease.
			Timeout: cfg.Reconcile.LeaseTTL * 2 / 3}
		if a := g.Auth; a != nil {
			gc.Auth = gitsource.Auth{Username: a.Username, Password: a.Password, SSHKeyFile: a.SSHKeyFile, KnownHostsFile: a.KnownHostsFile}
			if app := a.GitHubApp; app != nil {
				tokens, err := ghapp.New(ghapp.Config{AppID: int64(app.AppID), InstallationID: int64(app.InstallationID),
					PrivateKeyFile: app.PrivateKeyFile, BaseURL: app.BaseURL, Insecure: app.Insecure}, nil)
				if err != nil {
					return nil, store.SourceConfig{}, fmt.Errorf("git auth: %w", err)
				}
				gc.Auth.TokenFunc = tokens.Token
			}
		}
		src, err := gitsource.New(gc, logger)
		ref := g.Branch
		if g.Tag != "" {
			ref = "tag:" + g.Tag
		} else if g.Commit != "" {
			ref = "commit:" + g.Commit
		}
		return src, store.SourceConfig{Name: s.Name, URL: gitsource.Redact(g.URL), Branch: ref, Path: g.Path}, err
	default:
		src, err := dirsource.New(dirsource.Config{Name: s.Name, Path: s.Dir.Path}, logger)
		return src, store.SourceConfig{Name: s.Name, URL: "dir://" + s.Dir.Path}, err
	}
}

// newActions instantiates every configured action; on error the ones built are closed.
func newActions(cfg *config.Config, reg *actions.Registry, logger *slog.Logger) (map[string]actions.Action, error) {
	out := map[string]actions.Action{}
	hasExec := false
	for _, a := range cfg.Actions {
		act, err := reg.New(a.Type, a.Config, actions.Env{Name: a.Name, BaseDir: cfg.BaseDir, Logger: logger.With("action", a.Name)})
		if err != nil {
			closeActions(out)
			return nil, err
		}
		out[a.Name] = act
		hasExec = hasExec || a.Type == "exec"
	}
	if !hasExec {
		return out, nil
	}
	// Said once at start-up, so that operators know when a kill -9 can leave work behind.
	if mode, err := execaction.TreeKill(); err != nil {
		logger.Warn("exec commands' descendants may outlive trueup if it is killed", "mode", mode, "reason", err)
	}
	return out, nil
}

func closeActions(m map[string]actions.Action) {
	for _, a := range m {
		_ = actions.Close(a)
	}
}

// checkAction validates a ResourceType's action reference at ingest.
func checkAction(acts map[string]actions.Action) func(string, json.RawMessage) error {
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

func replicaName() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
