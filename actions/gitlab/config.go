package gitlab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
	"github.com/trueup-dev/trueup/internal/plaintext"
)

// Defaults of the instance config.
const (
	defaultRef          = "main"
	defaultPollInterval = 15 * time.Second
	defaultTimeout      = 30 * time.Second
)

// config is the instance config, decoded strictly.
type config struct {
	BaseURL      string    `json:"baseURL"`
	Project      projectID `json:"project"`
	TriggerToken string    `json:"triggerToken"`
	Token        string    `json:"token"`
	Ref          string    `json:"ref"`
	PollInterval string    `json:"pollInterval"`
	Timeout      string    `json:"timeout"`
	// AllowedRefs and AllowedVariables, when set, list what a type's with.ref and the names
	// of its with.variables may be (exact values or globs).
	AllowedRefs      actions.Allowlist `json:"allowedRefs"`
	AllowedVariables actions.Allowlist `json:"allowedVariables"`
	// Insecure allows the tokens over an http:// baseURL to another machine
	// (internal/plaintext).
	Insecure bool `json:"insecure"`
}

// projectID accepts a project path ("infra/db") or a numeric id, written as a JSON string or
// number.
type projectID string

func (p *projectID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*p = projectID(s)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return errors.New("project: want a path such as \"group/project\" or a numeric id")
	}
	*p = projectID(strconv.FormatInt(n, 10))
	return nil
}

// settings is a validated config.
type settings struct {
	api          string // base of the REST API, ending in "/api/v4/"
	project      string // project id or path, escaped as one path segment
	triggerToken string
	token        string
	ref          string
	pollInterval time.Duration
	timeout      time.Duration
	// nil: not restricted
	allowedRefs, allowedVariables actions.Allowlist
}

func parseConfig(raw json.RawMessage) (settings, error) {
	var c config
	if err := actions.DecodeStrict(raw, &c); err != nil {
		return settings{}, fmt.Errorf("decode config: %w", err)
	}
	var s settings
	api, err := apiBase(c.BaseURL)
	if err != nil {
		return settings{}, err
	}
	// Both tokens are required below, so any baseURL carries credentials.
	u, _ := url.Parse(api) // apiBase built it from a parsed URL
	if err := plaintext.Check("config: baseURL", u.Scheme, u.Hostname(), "the tokens", true, c.Insecure); err != nil {
		return settings{}, err
	}
	s.api = api

	project := strings.Trim(string(c.Project), "/")
	if project == "" {
		return settings{}, errors.New("config: project is required (a path such as \"group/project\" or a numeric id)")
	}
	s.project = url.PathEscape(project)

	// Errors below never quote token values.
	if c.TriggerToken == "" {
		return settings{}, errors.New("config: triggerToken is required (a pipeline trigger token, to start pipelines)")
	}
	if c.Token == "" {
		return settings{}, errors.New("config: token is required (an API token with read_api and api scope: the trigger token cannot read or cancel pipelines)")
	}
	for name, v := range map[string]string{"triggerToken": c.TriggerToken, "token": c.Token} {
		if strings.ContainsAny(v, "\r\n\x00") {
			return settings{}, fmt.Errorf("config: %s contains a control character", name)
		}
	}
	s.triggerToken, s.token = c.TriggerToken, c.Token

	s.ref = c.Ref
	if s.ref == "" {
		s.ref = defaultRef
	}
	if err := c.AllowedRefs.CheckPatterns("allowedRefs"); err != nil {
		return settings{}, err
	}
	if err := c.AllowedVariables.CheckPatterns("allowedVariables"); err != nil {
		return settings{}, err
	}
	s.allowedRefs, s.allowedVariables = c.AllowedRefs, c.AllowedVariables
	if s.pollInterval, err = actions.ParseDuration("pollInterval", c.PollInterval, defaultPollInterval); err != nil {
		return settings{}, err
	}
	if s.timeout, err = actions.ParseDuration("timeout", c.Timeout, defaultTimeout); err != nil {
		return settings{}, err
	}
	return s, nil
}

// apiBase turns baseURL into the REST API base.
func apiBase(raw string) (string, error) {
	api, err := gitlabapi.APIBase(raw)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	return api, nil
}

// with is a ResourceType's `with:` parameters, decoded strictly.
type with struct {
	// Ref overrides the config's ref for this type's pipelines.
	Ref string `json:"ref"`
	// Variables are static pipeline variables added to the TRUEUP_ ones.
	Variables map[string]scalar `json:"variables"`
	// OutputsJob names the job whose artifact trueup-outputs.json is merged into the outputs.
	OutputsJob string `json:"outputsJob"`
	// PlanJob names the job whose artifact trueup-outputs.json holds the plan of a pipeline
	// started with TRUEUP_OPERATION=plan; without it the type has no plan.
	PlanJob string `json:"planJob"`
}

// scalar is a variable value: a JSON string, number or boolean, kept as text.
type scalar string

func (s *scalar) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = scalar(v)
	case string(b) == "true" || string(b) == "false":
		*s = scalar(b)
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9') && json.Valid(b):
		*s = scalar(b)
	default:
		return errors.New("variable values must be strings, numbers or booleans")
	}
	return nil
}

// variableKey is GitLab's rule for CI/CD variable names.
var variableKey = regexp.MustCompile(`^[A-Za-z0-9_]{1,255}$`)

// reservedPrefix marks the variables trueup sets itself.
const reservedPrefix = "TRUEUP_"

// parseWith decodes and checks `with:` against what the instance config s allows a type to
// choose. It runs at ingest and on every call, so that a type stored before the allowlists
// were set is refused as well.
func parseWith(raw json.RawMessage, s *settings) (with, error) {
	var w with
	if err := actions.DecodeStrict(raw, &w); err != nil {
		return with{}, fmt.Errorf("decode with: %w", err)
	}
	keys := make([]string, 0, len(w.Variables))
	for k := range w.Variables {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case !variableKey.MatchString(k):
			return with{}, fmt.Errorf("with: variables: %q is not a valid GitLab variable name (letters, digits and _, at most 255)", k)
		case strings.HasPrefix(strings.ToUpper(k), reservedPrefix):
			return with{}, fmt.Errorf("with: variables: %s: TRUEUP_ variables are set by trueup", k)
		}
		if err := s.allowedVariables.Check("with.variables", k, "allowedVariables"); err != nil {
			return with{}, err
		}
	}
	if strings.ContainsAny(w.Ref, "\x00\r\n") || strings.TrimSpace(w.Ref) != w.Ref {
		return with{}, fmt.Errorf("with: ref %q is not a valid ref", w.Ref)
	}
	if w.Ref != "" {
		if err := s.allowedRefs.Check("with.ref", w.Ref, "allowedRefs"); err != nil {
			return with{}, err
		}
	}
	if strings.TrimSpace(w.OutputsJob) != w.OutputsJob {
		return with{}, fmt.Errorf("with: outputsJob %q has surrounding spaces", w.OutputsJob)
	}
	if strings.TrimSpace(w.PlanJob) != w.PlanJob {
		return with{}, fmt.Errorf("with: planJob %q has surrounding spaces", w.PlanJob)
	}
	return w, nil
}
