// Package secrets owns secret references (issue 10, point 2): a spec value
// `{secretRef: {name: NAME, key: KEY}}` is replaced, at action-call time only, by a value
// read from a controller-side store declared in the controller config (env, file, Vault KV
// v2), provided that config exposes NAME to the resource's source and namespace. The spec
// as written, reference included, is what PostgreSQL keeps; plaintext lives only in the
// resolved copy handed to one plugin call and in a short in-memory Vault cache.
package secrets

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/redact"
)

// store reads one key of one secret. A missing secret or key, or a reference that this
// store can never serve, is an actions.Terminal error; an unreachable store a plain one.
type store interface {
	// read returns the values of keys (distinct) of the secret name, in order.
	read(ctx context.Context, name string, keys []string) ([]string, error)
}

// Resolver resolves the references of specs. It is safe for concurrent use.
type Resolver struct {
	rules  []config.SecretExpose
	stores map[string]store
	logger *slog.Logger
}

// Option adjusts New; tests use them.
type Option func(*options)

type options struct {
	lookupEnv func(string) (string, bool)
	now       func() time.Time
}

// WithLookupEnv replaces os.LookupEnv for env stores.
func WithLookupEnv(f func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = f }
}

// WithClock replaces time.Now for Vault token renewal and the cache.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// New builds the stores of a validated config (config.Parse checked and defaulted it). It
// does no I/O apart from reading Vault CA files: stores are reached on the first reference.
func New(cfg config.Secrets, logger *slog.Logger, opts ...Option) (*Resolver, error) {
	o := options{lookupEnv: os.LookupEnv, now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Resolver{rules: cfg.Expose, stores: map[string]store{}, logger: logger}
	for _, s := range cfg.Stores {
		if _, dup := r.stores[s.Name]; dup {
			return nil, fmt.Errorf("secrets: store %q declared twice", s.Name)
		}
		switch s.Type {
		case "env":
			if s.Prefix == "" {
				return nil, fmt.Errorf("secrets: store %q: prefix required", s.Name)
			}
			r.stores[s.Name] = &envStore{name: s.Name, prefix: s.Prefix, lookup: o.lookupEnv}
		case "file":
			if s.Dir == "" {
				return nil, fmt.Errorf("secrets: store %q: dir required", s.Name)
			}
			r.stores[s.Name] = &fileStore{name: s.Name, dir: s.Dir}
		case "vault":
			if s.Vault == nil {
				return nil, fmt.Errorf("secrets: store %q: vault required", s.Name)
			}
			v, err := newVaultStore(s.Name, *s.Vault, o.now, logger)
			if err != nil {
				return nil, fmt.Errorf("secrets: %w", err)
			}
			r.stores[s.Name] = v
		default:
			return nil, fmt.Errorf("secrets: store %q: unknown type %q", s.Name, s.Type)
		}
	}
	for i, e := range cfg.Expose {
		if _, ok := r.stores[e.Store]; !ok {
			return nil, fmt.Errorf("secrets: expose[%d]: unknown store %q", i, e.Store)
		}
	}
	return r, nil
}

// Resolve returns spec with every secret reference replaced by its value (a JSON string),
// and the distinct values put in (those of at least redact.MinLength bytes), which the caller
// scrubs from whatever the plugin returns.
// A spec without the text "secretRef" is returned as it is, undecoded.
//
// Errors name the reference's path. A name that no expose rule gives to (source,
// namespace), a malformed reference, and a missing secret or key are actions.Terminal (the
// resource is Stalled until its spec changes); the not-exposed message is decided without
// asking any store, so it says nothing about whether the secret exists. A store that cannot
// be reached (Vault down or answering 5xx, a refused token) is a plain error, retried.
func (r *Resolver) Resolve(ctx context.Context, source, namespace string, spec json.RawMessage) (json.RawMessage, []string, error) {
	if !HasRefs(spec) {
		return spec, nil, nil
	}
	v, err := decodeSpec(spec)
	if err != nil {
		return nil, nil, actions.Terminalf("spec: %v", err)
	}
	refs, err := FindRefs(v, "spec")
	if err != nil {
		return nil, nil, actions.Terminal(err)
	}
	if len(refs) == 0 {
		return spec, nil, nil // the text was inside a string or a key deeper down
	}
	// Every reference is checked against the allowlist before any store is asked.
	from := make(map[string]string, len(refs)) // path → store
	for _, ref := range refs {
		st, ok := r.exposer(ref.Name, source, namespace)
		if !ok {
			return nil, nil, actions.Terminalf("%s: secret %q is not exposed to source %q, namespace %q (secrets.expose in the controller config)",
				ref.Path, ref.Name, source, namespace)
		}
		from[ref.Path] = st
	}
	// One read per secret, for all the keys the spec uses.
	type secretID struct{ store, name string }
	type id struct{ store, name, key string }
	var order []secretID
	keys := map[secretID][]string{}
	got := map[id]string{}
	first := map[secretID]string{} // path of its first reference, for errors
	for _, ref := range refs {
		sid := secretID{from[ref.Path], ref.Name}
		if _, ok := keys[sid]; !ok {
			order = append(order, sid)
			first[sid] = ref.Path
		}
		k := id{sid.store, sid.name, ref.Key}
		if _, ok := got[k]; !ok {
			got[k] = ""
			keys[sid] = append(keys[sid], ref.Key)
		}
	}
	for _, sid := range order {
		vals, err := r.stores[sid.store].read(ctx, sid.name, keys[sid])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", first[sid], err)
		}
		for i, key := range keys[sid] {
			got[id{sid.store, sid.name, key}] = vals[i]
		}
	}
	out, err := Replace(v, "spec", func(ref Ref) (string, error) {
		return got[id{from[ref.Path], ref.Name, ref.Key}], nil
	})
	if err != nil {
		return nil, nil, actions.Terminal(err)
	}
	resolved, err := encodeSpec(out)
	if err != nil {
		return nil, nil, fmt.Errorf("spec: %w", err)
	}
	values := make([]string, 0, len(got))
	seen := map[string]bool{}
	for _, val := range got {
		if len(val) >= redact.MinLength && !seen[val] {
			seen[val] = true
			values = append(values, val)
		}
	}
	sort.Strings(values)
	r.logger.Debug("secret references resolved", "source", source, "namespace", namespace, "refs", len(refs))
	return resolved, values, nil
}

// exposer applies the allowlist; a nil Resolver exposes nothing.
func (r *Resolver) exposer(name, source, namespace string) (string, bool) {
	if r == nil {
		return "", false
	}
	st, ok := Exposer(r.rules, name, source, namespace)
	if _, known := r.stores[st]; !ok || !known {
		return "", false
	}
	return st, true
}
