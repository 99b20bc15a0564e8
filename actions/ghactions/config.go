package ghactions

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
	"github.com/trueup-dev/trueup/internal/plaintext"
)

// Defaults of the instance config.
const (
	defaultRef          = "main"
	defaultPollInterval = 15 * time.Second
	defaultTimeout      = 30 * time.Second
	defaultCheckTimeout = 10 * time.Minute
)

// GitHub's workflow_dispatch limits.
const (
	maxInputs     = 25
	maxInputChars = 65535
)

// Inputs trueup sends with every dispatch; static inputs may not use these names.
const (
	inputName       = "name"
	inputNamespace  = "namespace"
	inputGeneration = "generation"
	inputRevision   = "revision"
	inputSpec       = "spec"
	inputOperation  = "operation"
	inputTrueupID   = "trueup_id"
)

var reservedInputs = []string{inputName, inputNamespace, inputGeneration, inputRevision, inputSpec, inputOperation, inputTrueupID}

// config is the instance config, decoded strictly.
type config struct {
	Token        string     `json:"token"`
	App          *appConfig `json:"app"`
	Owner        string     `json:"owner"`
	Repo         string     `json:"repo"`
	Ref          string     `json:"ref"`
	Workflow     string     `json:"workflow"`
	BaseURL      string     `json:"baseURL"`
	PollInterval string     `json:"pollInterval"`
	Timeout      string     `json:"timeout"`
	CheckTimeout string     `json:"checkTimeout"`
	// AllowedRefs, when set, lists the refs (or globs) a type's with.ref may choose.
	AllowedRefs actions.Allowlist `json:"allowedRefs"`
	// Insecure allows the token (or the App's tokens) over an http:// baseURL to another
	// machine (internal/plaintext).
	Insecure bool `json:"insecure"`
}

// appConfig authenticates as a GitHub App installation.
type appConfig struct {
	AppID          jsonID `json:"appID"`
	InstallationID jsonID `json:"installationID"`
	PrivateKeyFile string `json:"privateKeyFile"`
}

// jsonID is a numeric id written as a JSON number or as a string of digits: a value from a
// ${VAR} is always a string. It keeps the text as written; parseID checks it where the
// field's name is known, which an UnmarshalJSON error would not say.
type jsonID string

func (v *jsonID) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*v = jsonID(s)
		return nil
	}
	*v = jsonID(b) // a number, or something parseID refuses
	return nil
}

// parseID returns the positive integer v holds; field names it in errors.
func parseID(field string, v jsonID) (int64, error) {
	s := strings.TrimSpace(string(v))
	if s == "" {
		return 0, fmt.Errorf("config: %s is required", field)
	}
	digits := !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	n, err := strconv.ParseInt(s, 10, 64)
	if !digits || err != nil || n <= 0 {
		return 0, fmt.Errorf("config: %s must be a positive integer, as a number or a string of digits", field)
	}
	return n, nil
}

// settings is a validated config.
type settings struct {
	token        string // static token; empty with app auth
	app          *appSettings
	owner, repo  string
	ref          string
	workflow     string // default when with: names none
	baseURL      *url.URL
	insecure     bool // baseURL may be http:// on another machine
	pollInterval time.Duration
	timeout      time.Duration
	checkTimeout time.Duration
	allowedRefs  actions.Allowlist // nil: with.ref is not restricted
}

type appSettings struct {
	appID, installationID int64
	keyFile               string
	keyPEM                []byte // parsed by githubapi.NewApp; kept to scrub it from messages
}

// namePattern matches GitHub owner and repository names.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// Files is the actions.FilesFunc of the github-actions kind: the App's private key file,
// read by New.
func Files(raw json.RawMessage) ([]string, error) {
	var c config
	if err := actions.DecodeStrict(raw, &c); err != nil {
		return nil, fmt.Errorf("decode config: %w", err)
	}
	if c.App == nil || c.App.PrivateKeyFile == "" {
		return nil, nil
	}
	return []string{c.App.PrivateKeyFile}, nil
}

func parseConfig(raw json.RawMessage, baseDir string) (settings, error) {
	var c config
	if err := actions.DecodeStrict(raw, &c); err != nil {
		// Decode errors quote field names and types, never values, so the token stays out.
		return settings{}, fmt.Errorf("decode config: %w", err)
	}
	s := settings{owner: c.Owner, repo: c.Repo, ref: c.Ref, workflow: c.Workflow}
	switch {
	case c.Token != "" && c.App != nil:
		return settings{}, errors.New("config: set either token or app, not both")
	case c.Token == "" && c.App == nil:
		return settings{}, errors.New("config: token or app is required")
	case c.Token != "":
		if strings.ContainsAny(c.Token, " \t\r\n") {
			return settings{}, errors.New("config: token contains white space")
		}
		s.token = c.Token
	default:
		app, err := parseApp(*c.App, baseDir)
		if err != nil {
			return settings{}, err
		}
		s.app = app
	}
	if !namePattern.MatchString(c.Owner) {
		return settings{}, fmt.Errorf("config: owner %q is missing or invalid", c.Owner)
	}
	if !namePattern.MatchString(c.Repo) {
		return settings{}, fmt.Errorf("config: repo %q is missing or invalid", c.Repo)
	}
	if s.ref == "" {
		s.ref = defaultRef
	}
	if err := c.AllowedRefs.CheckPatterns("allowedRefs"); err != nil {
		return settings{}, err
	}
	s.allowedRefs = c.AllowedRefs
	if s.workflow != "" {
		if err := checkWorkflow(s.workflow); err != nil {
			return settings{}, fmt.Errorf("config: workflow: %w", err)
		}
	}

	u, err := githubapi.ParseBaseURL(c.BaseURL)
	if err != nil {
		return settings{}, fmt.Errorf("config: %w", err)
	}
	if err := plaintext.Check("config: baseURL", u.Scheme, u.Hostname(), "the token", true, c.Insecure); err != nil {
		return settings{}, err
	}
	s.insecure = c.Insecure
	s.baseURL = u

	for _, d := range []struct {
		name string
		raw  string
		def  time.Duration
		dst  *time.Duration
	}{
		{"pollInterval", c.PollInterval, defaultPollInterval, &s.pollInterval},
		{"timeout", c.Timeout, defaultTimeout, &s.timeout},
		{"checkTimeout", c.CheckTimeout, defaultCheckTimeout, &s.checkTimeout},
	} {
		*d.dst = d.def
		if d.raw == "" {
			continue
		}
		v, err := time.ParseDuration(d.raw)
		if err != nil {
			return settings{}, fmt.Errorf("config: %s: %w", d.name, err)
		}
		if v <= 0 {
			return settings{}, fmt.Errorf("config: %s %s must be positive", d.name, d.raw)
		}
		*d.dst = v
	}
	return s, nil
}

func parseApp(c appConfig, baseDir string) (*appSettings, error) {
	appID, err := parseID("app.appID", c.AppID)
	if err != nil {
		return nil, err
	}
	installationID, err := parseID("app.installationID", c.InstallationID)
	if err != nil {
		return nil, err
	}
	if c.PrivateKeyFile == "" {
		return nil, errors.New("config: app.privateKeyFile is required")
	}
	path := c.PrivateKeyFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(baseDir, path)
	}
	// Read here rather than by githubapi.NewApp: the text is kept to scrub it from messages.
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: app.privateKeyFile: %w", err)
	}
	return &appSettings{appID: appID, installationID: installationID, keyFile: path, keyPEM: data}, nil
}

// with holds a ResourceType's `with:` parameters.
type with struct {
	// Workflow is the workflow file name (deploy.yml) or its numeric id.
	Workflow string `json:"workflow"`
	// Ref overrides the config's ref.
	Ref string `json:"ref"`
	// Inputs are static workflow inputs sent with every dispatch.
	Inputs map[string]string `json:"inputs"`
	// DeleteWorkflow runs on delete; without it Workflow runs with operation=delete.
	DeleteWorkflow string `json:"deleteWorkflow"`
	// CheckWorkflow runs on resync to detect drift.
	CheckWorkflow string `json:"checkWorkflow"`
	// PlanWorkflow runs for pull-request previews with operation=plan (it may name the same
	// file as Workflow); without it the type has no plan.
	PlanWorkflow string `json:"planWorkflow"`
}

// workflowPattern is a workflow file name (in .github/workflows) or a numeric id.
var workflowPattern = regexp.MustCompile(`^([0-9]+|[A-Za-z0-9_.-]+\.ya?ml)$`)

func checkWorkflow(w string) error {
	if !workflowPattern.MatchString(w) {
		return fmt.Errorf("%q is neither a workflow file name (deploy.yml) nor a numeric workflow id", w)
	}
	return nil
}

// parseWith decodes and checks `with:` against the instance config s: its default workflow
// and what it allows a type to choose. It runs at ingest and on every call, so that a type
// stored before allowedRefs was set is refused as well.
func parseWith(raw json.RawMessage, s *settings) (with, error) {
	var w with
	if err := actions.DecodeStrict(raw, &w); err != nil {
		return with{}, fmt.Errorf("with: %w", err)
	}
	if w.Workflow == "" {
		w.Workflow = s.workflow
	}
	if w.Workflow == "" {
		return with{}, errors.New("with: workflow is required (the action's config names no default workflow)")
	}
	for _, f := range []struct{ name, v string }{
		{"workflow", w.Workflow}, {"deleteWorkflow", w.DeleteWorkflow}, {"checkWorkflow", w.CheckWorkflow},
		{"planWorkflow", w.PlanWorkflow},
	} {
		if f.v == "" {
			continue
		}
		if err := checkWorkflow(f.v); err != nil {
			return with{}, fmt.Errorf("with: %s: %w", f.name, err)
		}
	}
	if strings.ContainsAny(w.Ref, " \t\r\n~^:?*[\\") {
		return with{}, fmt.Errorf("with: ref %q is not a valid Git ref", w.Ref)
	}
	if w.Ref != "" {
		if err := s.allowedRefs.Check("with.ref", w.Ref, "allowedRefs"); err != nil {
			return with{}, err
		}
	}
	keys := make([]string, 0, len(w.Inputs))
	for k := range w.Inputs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case k == "":
			return with{}, errors.New("with: inputs: empty input name")
		case slices.Contains(reservedInputs, k):
			return with{}, fmt.Errorf("with: inputs: %q is set by trueup (reserved: %s)", k, strings.Join(reservedInputs, ", "))
		}
	}
	if n := len(reservedInputs) + len(w.Inputs); n > maxInputs {
		return with{}, fmt.Errorf("with: inputs: %d static inputs plus trueup's %d make %d; GitHub accepts at most %d",
			len(w.Inputs), len(reservedInputs), n, maxInputs)
	}
	return w, nil
}
