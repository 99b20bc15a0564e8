package gitsource

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/internal/envvar"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
	"github.com/trueup-dev/trueup/internal/plaintext"
	"github.com/trueup-dev/trueup/sources"
)

// Kind is the registry's name of Git sources: the `git:` block of a source.
const Kind = "git"

// Spec is a Git repository source.
type Spec struct {
	// URL is the repository: https://, http://, ssh://, git@host:org/repo, file:// or a
	// local path (relative to the config file's folder).
	URL string `yaml:"url"`
	// Branch is followed (default main); branch, tag and commit are exclusive.
	Branch string `yaml:"branch"`
	// Tag pins the source to a tag.
	Tag string `yaml:"tag"`
	// Commit pins the source to a commit.
	Commit string `yaml:"commit"`
	// Path is the folder of the manifests in the repository (empty: the whole repository).
	Path string `yaml:"path"`
	// Interval is how often the repository is polled (at least 1s); a webhook makes a push
	// apply at once.
	Interval time.Duration `yaml:"interval"`
	// Auth holds the credentials to fetch with (optional).
	Auth *AuthSpec `yaml:"auth"`
	// Insecure allows credentials over an http:// url to another machine.
	Insecure bool `yaml:"insecure"`
}

// AuthSpec holds credentials; they come from ${VAR}s or files, never from Git. At most one
// of password, sshKeyFile and githubApp is set.
type AuthSpec struct {
	// Username goes with password over https (x-access-token for a GitHub token).
	Username string `yaml:"username"`
	// Password is a password or an access token (normally a ${VAR}).
	Password string `yaml:"password"`
	// SSHKeyFile is a private key for ssh URLs; relative to the config file's folder.
	SSHKeyFile string `yaml:"sshKeyFile"`
	// KnownHostsFile lists the host keys an ssh URL's server is checked against; relative to
	// the config file's folder.
	KnownHostsFile string `yaml:"knownHostsFile"`
	// GitHubApp fetches over HTTPS with the installation tokens of a GitHub App.
	GitHubApp *AppSpec `yaml:"githubApp"`
}

// AppSpec identifies a GitHub App installation and its private key.
type AppSpec struct {
	AppID          NumericID `yaml:"appID"`          // the App's id (a number, or a ${VAR})
	InstallationID NumericID `yaml:"installationID"` // the installation's id (a number, or a ${VAR})
	PrivateKeyFile string    `yaml:"privateKeyFile"` // PEM as GitHub hands it out; relative to the config's folder
	BaseURL        string    `yaml:"baseURL"`        // REST API root; default https://api.github.com/
	// Insecure allows the token exchange over an http:// baseURL to another machine.
	Insecure bool `yaml:"insecure"`
}

// NumericID is an integer that may also be written as a string, so that it can come from
// a ${VAR} (expanded values are always strings).
type NumericID int64

// UnmarshalYAML accepts an integer scalar, quoted or not.
func (id *NumericID) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if v, err := strconv.ParseInt(strings.TrimSpace(n.Value), 10, 64); err == nil {
			*id = NumericID(v)
			return nil
		}
		if envvar.Ref.MatchString(n.Value) {
			return nil // a ${VAR}: the config loader checks the keys before it expands them
		}
	}
	// The value is not quoted: it may have come from the environment.
	return fmt.Errorf("line %d: expected an integer id", n.Line)
}

// Kind is "git".
func (s *Spec) Kind() string { return Kind }

// Defaults follows branch main when no revision is chosen, polls every
// sources.DefaultInterval and resolves the file paths (and a local repository's).
func (s *Spec) Defaults(path func(string) string) {
	if s.Interval == 0 {
		s.Interval = sources.DefaultInterval
	}
	if s.Branch == "" && s.Tag == "" && s.Commit == "" {
		s.Branch = "main"
	}
	if a := s.Auth; a != nil {
		a.SSHKeyFile = path(a.SSHKeyFile)
		a.KnownHostsFile = path(a.KnownHostsFile)
		if app := a.GitHubApp; app != nil {
			app.PrivateKeyFile = path(app.PrivateKeyFile)
		}
	}
	if isLocalPath(s.URL) {
		s.URL = path(s.URL)
	}
}

// isLocalPath reports whether a Git URL is a plain filesystem path.
func isLocalPath(u string) bool {
	if u == "" || strings.Contains(u, "://") {
		return false
	}
	// scp-like git@host:org/repo
	if i := strings.Index(u, ":"); i > 0 && !strings.Contains(u[:i], "/") {
		return false
	}
	return true
}

// Validate checks the block; at is "sources[i].git".
func (s *Spec) Validate(at string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.URL == "" {
		bad("%s.url: required", at)
	}
	n := 0
	for _, v := range []string{s.Branch, s.Tag, s.Commit} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		bad("%s: branch, tag and commit are exclusive", at)
	}
	if s.Interval < time.Second {
		bad("%s.interval: %s is below 1s", at, s.Interval)
	}
	if a := s.Auth; a != nil {
		if a.SSHKeyFile != "" && a.Password != "" {
			bad("%s.auth: password and sshKeyFile are exclusive", at)
		}
		if a.GitHubApp != nil {
			validateGitHubApp(at, s.URL, a, bad)
		}
	}
	if err := s.checkPlaintext(at); err != nil {
		bad("%w", err)
	}
	return errors.Join(errs...)
}

// validateGitHubApp checks the githubApp block of the auth; at is "sources[i].git".
func validateGitHubApp(at, gitURL string, a *AuthSpec, bad func(string, ...any)) {
	for _, f := range []struct{ name, v string }{
		{"username", a.Username}, {"password", a.Password}, {"sshKeyFile", a.SSHKeyFile}, {"knownHostsFile", a.KnownHostsFile},
	} {
		if f.v != "" {
			bad("%s.auth: %s and githubApp are exclusive", at, f.name)
		}
	}
	app := a.GitHubApp
	at += ".auth.githubApp"
	if app.AppID <= 0 {
		bad("%s.appID: required (a positive integer)", at)
	}
	if app.InstallationID <= 0 {
		bad("%s.installationID: required (a positive integer)", at)
	}
	if app.PrivateKeyFile == "" {
		bad("%s.privateKeyFile: required", at)
	}
	if app.BaseURL != "" {
		// Not quoted: it may hold credentials, which are refused as well.
		u, err := url.Parse(app.BaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			bad("%s.baseURL: must be an http(s) URL without credentials", at)
		} else if err := plaintext.Check(at+".baseURL", u.Scheme, u.Hostname(), "the App's signed token", true, app.Insecure); err != nil {
			bad("%w", err)
		}
	}
	if lower := strings.ToLower(gitURL); gitURL != "" && !strings.HasPrefix(lower, "https://") && !strings.HasPrefix(lower, "http://") {
		bad("%s: applies to https urls only", at)
	}
}

// checkPlaintext refuses credentials over an http:// url to another machine unless insecure
// is set; at is "sources[i].git". git:// with credentials is refused by New (it cannot
// carry them at all).
func (s *Spec) checkPlaintext(at string) error {
	u, err := url.Parse(s.URL)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return nil // https, ssh, git, a local path or an scp-like address
	}
	hasCred := u.User != nil
	what := "the credentials"
	if a := s.Auth; a != nil {
		hasCred = hasCred || a.Username != "" || a.Password != "" || a.GitHubApp != nil
		if a.GitHubApp != nil {
			what = "the App's installation tokens"
		}
	}
	return plaintext.Check(at+".url", u.Scheme, u.Hostname(), what, hasCred, s.Insecure)
}

// Info registers the repository by its redacted URL and the revision it follows.
func (s *Spec) Info() sources.Info {
	info := sources.Info{Interval: s.Interval, URL: Redact(s.URL), Ref: s.Branch, Path: s.Path}
	switch {
	case s.Tag != "":
		info.Ref = "tag:" + s.Tag
	case s.Commit != "":
		info.Ref = "commit:" + s.Commit
	default:
		info.Branch = s.Branch
	}
	return info
}

// Files are the ssh key, the known hosts and the GitHub App's key, those set.
func (s *Spec) Files() []string {
	a := s.Auth
	if a == nil {
		return nil
	}
	var out []string
	for _, f := range []string{a.SSHKeyFile, a.KnownHostsFile} {
		if f != "" {
			out = append(out, f)
		}
	}
	if app := a.GitHubApp; app != nil && app.PrivateKeyFile != "" {
		out = append(out, app.PrivateKeyFile)
	}
	return out
}

// Open is the registry's factory of Git sources: spec is a *Spec; the mirror lives in
// env.Dir. A GitHub App's key is read here, so that a bad key fails the config's check.
func Open(spec sources.Spec, env sources.Env) (sources.Source, error) {
	s, ok := spec.(*Spec)
	if !ok {
		return nil, fmt.Errorf("git source %q: spec is a %T, not a *gitsource.Spec", env.Name, spec)
	}
	c := Config{Name: env.Name, URL: s.URL, Insecure: s.Insecure, Branch: s.Branch, Tag: s.Tag, Commit: s.Commit, Path: s.Path,
		Dir: env.Dir, Timeout: env.Timeout, AllFiles: env.AllFiles}
	if a := s.Auth; a != nil {
		c.Auth = Auth{Username: a.Username, Password: a.Password, SSHKeyFile: a.SSHKeyFile, KnownHostsFile: a.KnownHostsFile}
		if app := a.GitHubApp; app != nil {
			tokens, err := githubapi.NewApp(githubapi.AppConfig{AppID: int64(app.AppID), InstallationID: int64(app.InstallationID),
				PrivateKeyFile: app.PrivateKeyFile, BaseURL: app.BaseURL, Insecure: app.Insecure}, nil)
			if err != nil {
				return nil, fmt.Errorf("git auth: %w", err)
			}
			c.Auth.TokenFunc = tokens.Token
		}
	}
	src, err := New(c, env.Logger)
	if err != nil {
		return nil, err
	}
	return src, nil
}

var _ sources.Spec = (*Spec)(nil)
