package terraform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// defaultTimeout bounds a call (init, plan, apply and output together) when the config sets
// none.
const defaultTimeout = 30 * time.Minute

// minRedactLen is the shortest secret-named env value that is redacted from messages; shorter
// ones would mangle ordinary words and protect nothing.
const minRedactLen = 6

// reservedEnv are set by the action for every run; config env may not change them.
var reservedEnv = []string{"TF_DATA_DIR", "TF_WORKSPACE", "TF_IN_AUTOMATION", "TF_INPUT", "PG_CONN_STR", "PG_SCHEMA_NAME", "CHECKPOINT_DISABLE"}

// config is the instance config, decoded strictly.
type config struct {
	// Module is the root module: a folder relative to the controller config's folder, or
	// {source, path}, a folder of a source's repository.
	Module moduleConfig `json:"module"`
	// Binary is terraform or tofu, a path (relative to the config's folder when it contains
	// a slash) or a name looked up in PATH; by default terraform, then tofu, from PATH.
	Binary string `json:"binary"`
	// Backend replaces the default pg backend in trueup's own database.
	Backend *backendConfig `json:"backend"`
	// Timeout bounds each call.
	Timeout string `json:"timeout"`
	// Env is added to the minimal environment of every run (provider credentials, a CLI
	// config file, a plugin cache).
	Env map[string]string `json:"env"`
	// WorkDir holds the working copies, one per resource; default: a folder of the temp dir.
	WorkDir string `json:"workDir"`
	// PullRequestModules lets previews plan a module read from a source with the pull
	// request's own version of it. Off by default: a plan runs the module's data sources and
	// providers, so whoever can open a pull request could run code on the controller.
	PullRequestModules bool `json:"pullRequestModules"`
}

// moduleConfig is "modules/db" (a folder of the controller's filesystem) or
// {"source": "infra", "path": "modules/db"} (a folder of the infra source's repository, read
// at the revision each resource came from).
type moduleConfig struct {
	dir    string
	source string
	path   string
}

func (m *moduleConfig) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &m.dir); err == nil {
		return nil
	}
	var repo struct {
		Source string `json:"source"`
		Path   string `json:"path"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&repo); err != nil {
		return fmt.Errorf("module must be a folder or {source, path}: %w", err)
	}
	if repo.Source == "" || repo.Path == "" {
		return errors.New("module: source and path are both required")
	}
	clean := path.Clean(repo.Path)
	if path.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(repo.Path, "\\") {
		return fmt.Errorf("module: path %q must be a folder inside the repository, relative to its root", repo.Path)
	}
	m.source, m.path = repo.Source, clean
	return nil
}

// backendConfig is a backend block: {"type": "s3", "config": {"bucket": "…", "key": "…"}}.
type backendConfig struct {
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config"`
}

// settings is a validated config with paths resolved.
type settings struct {
	module  string // absolute; "" when the module is read from a source
	repo    moduleConfig
	prPlans bool   // plan pull requests with their own module (repo modules only)
	binary  string // "" (look up terraform, then tofu), absolute, or a bare name
	backend string // the override file's content
	custom  bool   // backend comes from the config, not pg in trueup's database
	timeout time.Duration
	env     []string // "K=V", sorted by key
	secrets []string // values of secret-named env variables, longest first
	workDir string   // absolute: the instance's folder of working copies
	rootDir string   // workDir, or the per-user folder of the temp dir that holds the default one
	schema  string   // the pg backend's schema
}

var backendType = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func parseConfig(raw json.RawMessage, env actions.Env) (settings, error) {
	var c config
	if err := actions.DecodeStrict(raw, &c); err != nil {
		return settings{}, fmt.Errorf("decode config: %w", err)
	}
	var s settings
	var err error
	if c.PullRequestModules && c.Module.source == "" {
		return settings{}, errors.New("config: pullRequestModules applies to a module read from a source ({source, path}) only")
	}
	switch {
	case c.Module.source != "":
		s.repo, s.prPlans = c.Module, c.PullRequestModules
	case c.Module.dir == "":
		return settings{}, errors.New("config: module is required")
	default:
		if s.module, err = filepath.Abs(resolve(env.BaseDir, c.Module.dir)); err != nil {
			return settings{}, fmt.Errorf("config: module: %w", err)
		}
	}
	s.binary = c.Binary
	if strings.Contains(c.Binary, "/") {
		if s.binary, err = filepath.Abs(resolve(env.BaseDir, c.Binary)); err != nil {
			return settings{}, fmt.Errorf("config: binary: %w", err)
		}
	}

	block := map[string]any{"pg": map[string]any{}}
	if b := c.Backend; b != nil {
		if !backendType.MatchString(b.Type) {
			return settings{}, fmt.Errorf("config: backend.type %q is not a backend name (s3, gcs, azurerm, pg, …)", b.Type)
		}
		var conf map[string]any
		if len(b.Config) > 0 && string(b.Config) != "null" {
			if err := json.Unmarshal(b.Config, &conf); err != nil {
				return settings{}, fmt.Errorf("config: backend.config must be an object: %w", err)
			}
		}
		if conf == nil {
			conf = map[string]any{}
		}
		block = map[string]any{b.Type: conf}
		s.custom = true
	}
	override, err := json.MarshalIndent(map[string]any{"terraform": map[string]any{"backend": block}}, "", "  ")
	if err != nil {
		return settings{}, fmt.Errorf("config: backend: %w", err)
	}
	s.backend = string(override) + "\n"

	timeout, err := actions.ParseDuration("timeout", c.Timeout, defaultTimeout)
	if err != nil {
		return settings{}, err
	}
	s.timeout = timeout

	vars, secrets, err := actions.ParseEnv(c.Env, func(k string) string {
		if slices.Contains(reservedEnv, k) || strings.HasPrefix(k, "TF_CLI_ARGS") || strings.HasPrefix(k, "TRUEUP_") {
			return "set by the terraform action itself"
		}
		return ""
	}, minRedactLen)
	if err != nil {
		return settings{}, err
	}
	s.env, s.secrets = vars, secrets

	s.rootDir = filepath.Join(os.TempDir(), fmt.Sprintf("trueup-terraform-%d", os.Geteuid()))
	s.workDir = filepath.Join(s.rootDir, safeName(env.Name))
	if c.WorkDir != "" {
		if s.workDir, err = filepath.Abs(resolve(env.BaseDir, c.WorkDir)); err != nil {
			return settings{}, fmt.Errorf("config: workDir: %w", err)
		}
		s.rootDir = s.workDir
	}
	s.schema = schemaName(env.Name)
	return s, nil
}

func resolve(base, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(base, p)
}
