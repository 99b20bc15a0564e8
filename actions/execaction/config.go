package execaction

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
)

// defaultTimeout bounds a call when the config sets none.
const defaultTimeout = 5 * time.Minute

// minRedactLen is the shortest config env value that is redacted from command output;
// shorter values ("1", "true", "eu") would mangle messages and protect nothing.
const minRedactLen = 6

// config is the instance config, decoded strictly.
type config struct {
	Command []string          `json:"command"`
	Timeout string            `json:"timeout"`
	Env     map[string]string `json:"env"`
	Dir     string            `json:"dir"`
	LockDir string            `json:"lockDir"`
	// InheritEnv hands the command the controller's whole environment (TRUEUP_ variables
	// excepted) instead of the minimal one.
	InheritEnv bool `json:"inheritEnv"`
	// Plan declares that the command implements the plan operation; without it Plan
	// returns actions.ErrNoPlan and never starts the command.
	Plan bool `json:"plan"`
}

// settings is a validated config with paths resolved.
type settings struct {
	path    string // absolute, or a bare name looked up in PATH
	args    []string
	dir     string
	lockDir string // absolute
	timeout time.Duration
	env     []string // "K=V", sorted by key
	inherit bool     // start from the controller's environment, not the minimal one
	plan    bool     // the command implements the plan operation
	secrets []string // values of secret-named env variables, to redact; longest first
}

func parseConfig(raw json.RawMessage, baseDir string) (settings, error) {
	var c config
	if err := actions.DecodeStrict(raw, &c); err != nil {
		return settings{}, fmt.Errorf("decode config: %w", err)
	}
	var s settings
	if len(c.Command) == 0 || c.Command[0] == "" {
		return settings{}, errors.New("config: command is required")
	}
	path := c.Command[0]
	if strings.Contains(path, "/") && !filepath.IsAbs(path) {
		abs, err := filepath.Abs(filepath.Join(baseDir, path))
		if err != nil {
			return settings{}, fmt.Errorf("config: command: %w", err)
		}
		path = abs
	}
	s.path, s.args = path, slices.Clone(c.Command[1:])
	s.inherit = c.InheritEnv
	s.plan = c.Plan

	dir := c.Dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(baseDir, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return settings{}, fmt.Errorf("config: dir: %w", err)
	}
	s.dir = abs

	s.lockDir = defaultLockDir()
	if c.LockDir != "" {
		dir := c.LockDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(baseDir, dir)
		}
		if s.lockDir, err = filepath.Abs(dir); err != nil {
			return settings{}, fmt.Errorf("config: lockDir: %w", err)
		}
	}

	timeout, err := actions.ParseDuration("timeout", c.Timeout, defaultTimeout)
	if err != nil {
		return settings{}, err
	}
	s.timeout = timeout

	vars, secrets, err := actions.ParseEnv(c.Env, func(k string) string {
		if strings.HasPrefix(k, "TRUEUP_") {
			return "TRUEUP_ variables are set by the exec protocol"
		}
		return ""
	}, minRedactLen)
	if err != nil {
		return settings{}, err
	}
	s.env, s.secrets = vars, secrets
	return s, nil
}

// formatDuration prints d without the zero units time.Duration.String adds ("5m", not "5m0s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
