package httpcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/plaintext"
)

// Defaults of the instance config.
const (
	defaultMethod       = http.MethodPost
	defaultTimeout      = 30 * time.Second
	defaultPollInterval = 10 * time.Second
	defaultAttempts     = 3
	defaultInitial      = 500 * time.Millisecond
)

// minRedactLen is the shortest header value redacted from messages; shorter values ("1",
// "gold") would mangle messages and protect nothing.
const minRedactLen = 6

// config is the instance config, decoded strictly.
type config struct {
	URL           string            `json:"url"`
	Method        string            `json:"method"`
	Headers       map[string]string `json:"headers"`
	SigningSecret string            `json:"signingSecret"`
	Timeout       string            `json:"timeout"`
	PollInterval  string            `json:"pollInterval"`
	Retry         *retryConfig      `json:"retry"`
	// Plan says the provisioner implements the "plan" operation. It is opt-in: a provisioner
	// that predates plan and does not read "operation" would apply a pull request's spec.
	Plan bool `json:"plan"`
	// Insecure allows headers, a signing secret or URL credentials over an http:// url to
	// another machine (internal/plaintext).
	Insecure bool `json:"insecure"`
}

type retryConfig struct {
	// Attempts counts every try of a call, the first included.
	Attempts int    `json:"attempts"`
	Initial  string `json:"initial"`
}

// settings is a validated config.
type settings struct {
	url          *url.URL
	method       string
	headers      http.Header
	secret       []byte // HMAC key; nil when requests are not signed
	timeout      time.Duration
	pollInterval time.Duration
	attempts     int
	initial      time.Duration
	secrets      []string // values scrubbed from messages, longest first
	insecure     bool     // the config's insecure: true (redirects may downgrade to http)
	plan         bool     // the provisioner answers operation "plan"
}

// reservedHeaders are set by the plugin on every request.
var reservedHeaders = []string{"Content-Type", "Content-Length", "Host", "Idempotency-Key", "Transfer-Encoding"}

func parseConfig(raw json.RawMessage) (settings, error) {
	var c config
	if err := actions.DecodeStrict(raw, &c); err != nil {
		return settings{}, fmt.Errorf("decode config: %w", err)
	}
	var s settings
	if c.URL == "" {
		return settings{}, errors.New("config: url is required")
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		// The URL may carry credentials: do not quote it.
		return settings{}, errors.New("config: url must be an absolute http(s) URL")
	}
	if u.Fragment != "" {
		return settings{}, errors.New("config: url must not have a fragment")
	}
	s.url = u
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			s.secrets = append(s.secrets, p)
		}
	}

	s.method = strings.ToUpper(c.Method)
	switch s.method {
	case "":
		s.method = defaultMethod
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return settings{}, fmt.Errorf("config: method %q: want POST, PUT or PATCH (the request has a JSON body)", c.Method)
	}

	s.headers = http.Header{}
	names := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := c.Headers[k]
		ck := http.CanonicalHeaderKey(k)
		// Errors name headers, never values: values are secrets.
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			return settings{}, fmt.Errorf("config: headers: %q is not a valid header name", k)
		case slices.Contains(reservedHeaders, ck) || strings.HasPrefix(ck, "X-Trueup-"):
			return settings{}, fmt.Errorf("config: headers: %s is set by trueup", ck)
		case strings.ContainsAny(v, "\r\n\x00"):
			return settings{}, fmt.Errorf("config: headers: %s: value contains a control character", ck)
		}
		s.headers.Set(ck, v)
		s.secrets = append(s.secrets, v)
		// "Bearer <token>", "Basic <credentials>": the credential alone may be echoed.
		if f := strings.Fields(v); len(f) > 1 {
			s.secrets = append(s.secrets, f[len(f)-1])
		}
	}
	if c.SigningSecret != "" {
		s.secret = []byte(c.SigningSecret)
		s.secrets = append(s.secrets, c.SigningSecret)
	}
	// Every header value counts as a credential, as it does for redaction: trueup cannot tell
	// an API key in X-Api-Key from a harmless header. The signature authenticates the request
	// too, and whoever reads it can replay it.
	var what []string
	if u.User != nil {
		what = append(what, "the credentials in the url")
	}
	if len(c.Headers) > 0 {
		what = append(what, "the headers")
	}
	if c.SigningSecret != "" {
		what = append(what, "the signed requests")
	}
	if err := plaintext.Check("config: url", u.Scheme, u.Hostname(), strings.Join(what, " and "), len(what) > 0, c.Insecure); err != nil {
		return settings{}, err
	}
	s.insecure = c.Insecure
	s.plan = c.Plan
	s.secrets = slices.DeleteFunc(s.secrets, func(v string) bool { return len(v) < minRedactLen })
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortFunc(s.secrets, func(a, b string) int { return len(b) - len(a) })
	s.secrets = slices.Compact(s.secrets)

	if s.timeout, err = actions.ParseDuration("timeout", c.Timeout, defaultTimeout); err != nil {
		return settings{}, err
	}
	if s.pollInterval, err = actions.ParseDuration("pollInterval", c.PollInterval, defaultPollInterval); err != nil {
		return settings{}, err
	}
	s.attempts, s.initial = defaultAttempts, defaultInitial
	if r := c.Retry; r != nil {
		switch {
		case r.Attempts < 0:
			return settings{}, fmt.Errorf("config: retry.attempts %d is negative", r.Attempts)
		case r.Attempts > 0:
			s.attempts = r.Attempts
		}
		if s.initial, err = actions.ParseDuration("retry.initial", r.Initial, defaultInitial); err != nil {
			return settings{}, err
		}
	}
	return s, nil
}

// with is a ResourceType's `with:` parameters, decoded strictly.
type with struct {
	// Path is appended to the config url.
	Path string `json:"path"`
	// Body is a JSON object of static fields, sent as the request's "with" member.
	Body json.RawMessage `json:"body"`
}

func parseWith(raw json.RawMessage) (with, error) {
	var w with
	if err := actions.DecodeStrict(raw, &w); err != nil {
		return with{}, fmt.Errorf("decode with: %w", err)
	}
	if b := bytes.TrimSpace(w.Body); len(b) > 0 && string(b) != "null" && b[0] != '{' {
		return with{}, errors.New("with: body must be a JSON object")
	}
	if w.Path != "" {
		if strings.ContainsAny(w.Path, "?#\\%") || strings.ContainsFunc(w.Path, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return with{}, fmt.Errorf("with: path %q: only plain path segments are allowed (no ?, #, %%, \\ or control characters)", w.Path)
		}
		for seg := range strings.SplitSeq(strings.Trim(w.Path, "/"), "/") {
			if seg == "" || seg == "." || seg == ".." {
				return with{}, fmt.Errorf("with: path %q: empty, . and .. segments are not allowed", w.Path)
			}
		}
	}
	return w, nil
}

// target is the config url with path appended, each segment escaped.
func (s settings) target(path string) *url.URL {
	u := *s.url
	if path == "" {
		return &u
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	esc := make([]string, len(segs))
	for i, seg := range segs {
		esc[i] = url.PathEscape(seg)
	}
	u.Path = strings.TrimSuffix(s.url.Path, "/") + "/" + strings.Join(segs, "/")
	u.RawPath = strings.TrimSuffix(s.url.EscapedPath(), "/") + "/" + strings.Join(esc, "/")
	return &u
}

// display is u fit for errors and logs: no credentials, no query.
func display(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}
