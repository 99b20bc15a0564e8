package ocisource

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/trueup-dev/trueup/internal/plaintext"
	"github.com/trueup-dev/trueup/sources"
)

// Kind is the registry's name of OCI artifact sources: the `oci:` block of a source.
const Kind = "oci"

// DefaultTag is followed when none of tag, semver and digest is set.
const DefaultTag = "latest"

// Spec is an OCI artifact source: a repository of a container registry whose artifacts hold
// the manifests (pushed with `flux push artifact`, or any single tar.gz layer).
type Spec struct {
	// URL is the repository, oci://host[:port]/path (no tag or digest: those are tag, semver
	// and digest).
	URL string `yaml:"url"`
	// Tag is followed; tag, semver and digest are exclusive.
	Tag string `yaml:"tag"`
	// Semver follows the highest tag in this range (">=1.0.0 <2.0.0", "~1.4"); prereleases
	// only when the range names one. Tags that are not versions are ignored.
	Semver string `yaml:"semver"`
	// Digest pins the source to one artifact (sha256:<64 hex>).
	Digest string `yaml:"digest"`
	// Path is the folder of the manifests in the artifact (empty: all of it).
	Path string `yaml:"path"`
	// Interval is how often the tag is checked (at least 1s); a webhook makes a push apply at
	// once.
	Interval time.Duration `yaml:"interval"`
	// Username goes with password (basic auth, or the registry's token exchange).
	Username string `yaml:"username"`
	// Password is a password or an access token (normally a ${VAR}).
	Password string `yaml:"password"`
	// SecretRef reads the credentials from a docker config.json file (its auths entry for
	// the registry's host); exclusive with username and password.
	SecretRef *SecretRef `yaml:"secretRef"`
	// Insecure talks plain HTTP to the registry; allowed only for a loopback host.
	Insecure bool `yaml:"insecure"`
}

// SecretRef names a file of credentials.
type SecretRef struct {
	// File is a docker config.json (`{"auths": {"host": {"auth": "…"}}}`); relative to the
	// config file's folder. Credential helpers and stores are not run.
	File string `yaml:"file"`
}

// Kind is "oci".
func (s *Spec) Kind() string { return Kind }

// Defaults follows tag latest when no revision is chosen, polls every
// sources.DefaultInterval and resolves the secret file.
func (s *Spec) Defaults(resolve func(string) string) {
	if s.Interval == 0 {
		s.Interval = sources.DefaultInterval
	}
	if s.Tag == "" && s.Semver == "" && s.Digest == "" {
		s.Tag = DefaultTag
	}
	if s.SecretRef != nil && s.SecretRef.File != "" {
		s.SecretRef.File = resolve(s.SecretRef.File)
	}
}

var digestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Validate checks the block; at is "sources[i].oci".
func (s *Spec) Validate(at string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.URL == "" {
		bad("%s.url: required", at)
	} else if repo, err := s.repository(); err != nil {
		bad("%s.url: %w", at, err)
	} else if s.Insecure && !plaintext.Loopback(hostOnly(repo.RegistryStr())) {
		bad("%s.insecure: only for a loopback registry (localhost, 127.0.0.0/8, ::1)", at)
	}
	n := 0
	for _, v := range []string{s.Tag, s.Semver, s.Digest} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		bad("%s: tag, semver and digest are exclusive", at)
	}
	if s.Tag != "" {
		if _, err := name.NewTag("example.com/x:"+s.Tag, name.StrictValidation); err != nil {
			bad("%s.tag: %q is not a valid tag", at, s.Tag)
		}
	}
	if s.Semver != "" {
		if _, err := semver.NewConstraint(s.Semver); err != nil {
			bad("%s.semver: %q: %v", at, s.Semver, err)
		}
	}
	if s.Digest != "" && !digestRe.MatchString(s.Digest) {
		bad("%s.digest: %q is not sha256: and 64 lowercase hex digits", at, s.Digest)
	}
	if c := path.Clean(s.Path); path.IsAbs(s.Path) || c == ".." || strings.HasPrefix(c, "../") {
		bad("%s.path: %q must be a relative folder inside the artifact", at, s.Path)
	}
	if s.Interval < time.Second {
		bad("%s.interval: %s is below 1s", at, s.Interval)
	}
	if s.Username != "" && s.Password == "" || s.Username == "" && s.Password != "" {
		bad("%s: username and password go together", at)
	}
	if s.SecretRef != nil {
		if s.Password != "" || s.Username != "" {
			bad("%s: secretRef and username/password are exclusive", at)
		}
		if s.SecretRef.File == "" {
			bad("%s.secretRef.file: required", at)
		}
	}
	return errors.Join(errs...)
}

// repository parses the URL without its oci:// scheme.
func (s *Spec) repository() (name.Repository, error) {
	rest, ok := strings.CutPrefix(s.URL, "oci://")
	if !ok {
		return name.Repository{}, fmt.Errorf("%q must start with oci://", s.URL)
	}
	if strings.ContainsAny(rest, "@") || strings.Contains(rest, "://") {
		return name.Repository{}, fmt.Errorf("%q: credentials, tags and digests do not go in the url", s.URL)
	}
	if !strings.Contains(rest, "/") || strings.Contains(path.Base(rest), ":") {
		return name.Repository{}, fmt.Errorf("%q must be oci://host/repository, without a tag", s.URL)
	}
	opts := []name.Option{name.StrictValidation}
	if s.Insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(rest, opts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("%q: %w", s.URL, err)
	}
	return repo, nil
}

// hostOnly drops the port of host[:port] and the brackets of an IPv6 address.
func hostOnly(hostport string) string {
	if strings.HasPrefix(hostport, "[") {
		if i := strings.Index(hostport, "]"); i > 0 {
			return hostport[1:i]
		}
	}
	if i := strings.LastIndex(hostport, ":"); i >= 0 && !strings.Contains(hostport[:i], ":") {
		return hostport[:i]
	}
	return hostport
}

// Ref is the revision the source follows as shown: tag:v1, semver:>=1.0 <2 or
// digest:sha256:….
func (s *Spec) Ref() string {
	switch {
	case s.Digest != "":
		return "digest:" + s.Digest
	case s.Semver != "":
		return "semver:" + s.Semver
	}
	return "tag:" + s.Tag
}

// Info registers the repository by its URL (it carries no credentials) and the reference it
// follows.
func (s *Spec) Info() sources.Info {
	return sources.Info{Interval: s.Interval, URL: s.URL, Ref: s.Ref(), Path: s.Path}
}

// Files is the docker config file, when set.
func (s *Spec) Files() []string {
	if s.SecretRef == nil || s.SecretRef.File == "" {
		return nil
	}
	return []string{s.SecretRef.File}
}

// Open is the registry's factory of OCI sources: spec is a *Spec. The docker config file is
// read here, so that a bad file fails the config's check.
func Open(spec sources.Spec, env sources.Env) (sources.Source, error) {
	s, ok := spec.(*Spec)
	if !ok {
		return nil, fmt.Errorf("oci source %q: spec is a %T, not a *ocisource.Spec", env.Name, spec)
	}
	return New(s, env)
}

var _ sources.Spec = (*Spec)(nil)

// Repository is the repository's path in its registry ("acme/config"), as registry
// notifications name it; "" when the URL does not parse.
func (s *Spec) Repository() string {
	repo, err := s.repository()
	if err != nil {
		return ""
	}
	return repo.RepositoryStr()
}
