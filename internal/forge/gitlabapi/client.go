// Package gitlabapi owns what trueup knows of GitLab's REST API (/api/v4): the base URL, the
// PRIVATE-TOKEN header, redirects refused, rate limits (Retry-After, RateLimit-Remaining and
// RateLimit-Reset, calls paused until the reset), pagination by X-Next-Page to its end, and
// errors that quote a bounded, scrubbed excerpt of the answer. Every package that calls GitLab (the
// gitlab action, commit statuses, preview notes) sends its calls through a Client.
package gitlabapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/forge/ratelimit"
	"github.com/trueup-dev/trueup/internal/httpwait"
)

// Response limits.
const (
	maxBody    = 4 << 20 // bytes of a JSON answer read
	maxExcerpt = 512     // bytes of an error answer quoted in errors
	perPage    = 100     // GitLab's maximum page size
)

// DefaultMaxPages bounds a listing: 100,000 items at GitLab's largest page size. A listing
// that goes on past its bound fails; it is never cut short silently.
const DefaultMaxPages = 1000

// defaultRateLimitWait is how long calls pause after a 429 that names no reset time.
const defaultRateLimitWait = time.Minute

// Config is what New builds a client from.
type Config struct {
	// BaseURL is GitLab's address ("https://gitlab.example.com/") or its API root (ending
	// in /api/v4).
	BaseURL string
	// Token is the API token, sent as PRIVATE-TOKEN on the requests that ask for it.
	Token string
	// Secrets are other credentials (a trigger token) scrubbed from errors with Token.
	Secrets []string
	// Timeout bounds each call; 0: none.
	Timeout time.Duration
	// MaxPages bounds the pages of one listing (EachPage); 0: DefaultMaxPages.
	MaxPages int
	// Transport carries the requests (nil: a clone of http.DefaultTransport).
	Transport http.RoundTripper
	// Pauses holds the pause the client shares; nil: ratelimit.Shared(), the process's.
	Pauses *ratelimit.Registry
	Logger *slog.Logger     // nil: discard
	Now    func() time.Time // nil: time.Now
}

// Client calls one GitLab's REST API. It is safe for concurrent use; a rate limit seen by
// one call pauses every call of every client of the same token and host (and registry of
// pauses) until the reset.
type Client struct {
	api      string // base of the REST API, ending in "/api/v4/"
	token    string
	timeout  time.Duration
	maxPages int
	hc       *http.Client
	scrubber *strings.Replacer
	logger   *slog.Logger
	now      func() time.Time

	pause     *ratelimit.Pause // shared by the clients of the token at this host
	remaining atomic.Int64
}

// New checks cfg.BaseURL and returns the client; it makes no call.
func New(cfg Config) (*Client, error) {
	api, err := APIBase(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	tr := cfg.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	var pairs []string
	for _, s := range append(slices.Clone(cfg.Secrets), cfg.Token) {
		if s != "" {
			pairs = append(pairs, s, "***")
		}
	}
	pauses := cfg.Pauses
	if pauses == nil {
		pauses = ratelimit.Shared()
	}
	c := &Client{api: api, token: cfg.Token, timeout: cfg.Timeout, maxPages: cfg.MaxPages, logger: cfg.Logger, now: cfg.Now,
		hc:       &http.Client{Transport: tr, CheckRedirect: noRedirect},
		scrubber: strings.NewReplacer(pairs...), pause: pauses.For(origin(api), cfg.Token)}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.maxPages <= 0 {
		c.maxPages = DefaultMaxPages
	}
	c.remaining.Store(-1)
	return c, nil
}

// APIBase turns a baseURL ("https://gitlab.example.com/", or one already ending in /api/v4)
// into the REST API base, ending in "/api/v4/".
func APIBase(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("baseURL is required (e.g. https://gitlab.example.com/)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("baseURL is not a URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return "", errors.New("baseURL must be an absolute http(s) URL")
	}
	if u.User != nil {
		return "", errors.New("baseURL must not hold credentials; use token and triggerToken")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("baseURL must not have a query or fragment")
	}
	p := strings.TrimSuffix(u.EscapedPath(), "/")
	p = strings.TrimSuffix(p, "/api/v4")
	return u.Scheme + "://" + u.Host + p + "/api/v4/", nil
}

// origin is scheme://host of an API base.
func origin(api string) string {
	u, _ := url.Parse(api)
	return u.Scheme + "://" + u.Host
}

// APIError is an answer other than 2xx or 429. Its message is bounded and scrubbed.
type APIError struct {
	Method  string
	Path    string // relative to /api/v4, without query
	Status  int
	Message string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("gitlab %s %s: %d %s", e.Method, e.Path, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// IsStatus reports whether err is an answer with status.
func IsStatus(err error, status int) bool {
	var e *APIError
	return errors.As(err, &e) && e.Status == status
}

// RateLimitError reports that GitLab refused a call (429), or that the call was not sent
// because an earlier one was refused and the reset time has not come.
type RateLimitError struct {
	Until time.Time
	Sent  bool // a 429 came back for this very call
}

func (e *RateLimitError) Error() string {
	return "gitlab rate limit: calls paused until " + e.Until.UTC().Format(time.RFC3339)
}

// Request is one REST call.
type Request struct {
	Method string
	Path   string     // relative to /api/v4, escaped
	Query  url.Values // nil for none
	Form   url.Values // sent as the form body when non-nil
	Auth   bool       // send the API token
}

// Response is a 2xx answer.
type Response struct {
	Header http.Header
	Body   []byte
}

// newRequest builds the HTTP request of r.
func (c *Client) newRequest(ctx context.Context, r Request) (*http.Request, error) {
	target := c.api + r.Path
	if len(r.Query) > 0 {
		target += "?" + r.Query.Encode()
	}
	var body io.Reader
	if r.Form != nil {
		// Tokens travel in the form body, never in the URL, so that no proxy or error
		// message ever sees them.
		body = strings.NewReader(r.Form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, target, body)
	if err != nil {
		return nil, fmt.Errorf("gitlab %s %s: %w", r.Method, r.Path, err)
	}
	if r.Form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.Auth {
		req.Header.Set("PRIVATE-TOKEN", c.token)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "trueup")
	return req, nil
}

// Do sends r unless calls are paused by a rate limit, and returns the 2xx answer.
func (c *Client) Do(ctx context.Context, r Request) (Response, error) {
	if until, ok := c.Limited(); ok {
		return Response{}, &RateLimitError{Until: until}
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := c.newRequest(ctx, r)
	if err != nil {
		return Response{}, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// url.Error quotes the URL; ours holds no secret, but the path alone reads better.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return Response{}, fmt.Errorf("gitlab %s %s: %w", r.Method, r.Path, err)
	}
	defer resp.Body.Close()
	c.noteRateLimit(resp)

	if resp.StatusCode == http.StatusTooManyRequests {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxExcerpt))
		until := c.now().Add(RetryAfter(resp.Header, c.now()))
		c.pause.Extend(until)
		c.logger.Warn("gitlab rate limit reached; pausing calls", "method", r.Method, "path", r.Path,
			"until", until.UTC().Format(time.RFC3339))
		return Response{}, &RateLimitError{Until: until, Sent: true}
	}
	if resp.StatusCode/100 == 3 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxExcerpt))
		msg := "redirects are not followed (is baseURL right?)"
		if loc, err := resp.Location(); err == nil {
			msg = "redirect to " + loc.Scheme + "://" + loc.Host + " not followed (is baseURL right?)"
		}
		return Response{}, &APIError{Method: r.Method, Path: r.Path, Status: resp.StatusCode, Message: c.Scrub(msg)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return Response{}, fmt.Errorf("gitlab %s %s: read answer: %w", r.Method, r.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		return Response{}, &APIError{Method: r.Method, Path: r.Path, Status: resp.StatusCode, Message: c.excerpt(b)}
	}
	if len(b) > maxBody {
		return Response{}, fmt.Errorf("gitlab %s %s: answer larger than %d MiB", r.Method, r.Path, maxBody>>20)
	}
	return Response{Header: resp.Header, Body: b}, nil
}

// noRedirect refuses every redirect: Go would forward PRIVATE-TOKEN, like every custom
// header, to wherever the Location points, and on a 307 or 308 a form body holding a trigger
// token too. GitLab's API answers where it is asked; a redirect means a wrong baseURL (http
// for https, a moved host) or something in between that should not see the tokens.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// GetJSON sends r and decodes its answer into out, keeping numbers exact.
func (c *Client) GetJSON(ctx context.Context, r Request, out any) (Response, error) {
	resp, err := c.Do(ctx, r)
	if err != nil {
		return resp, err
	}
	dec := json.NewDecoder(bytes.NewReader(resp.Body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return resp, fmt.Errorf("gitlab %s %s: decode answer: %w", r.Method, r.Path, err)
	}
	return resp, nil
}

// EachPage lists a paginated collection, following X-Next-Page to its end, and hands each
// page to fn until fn says stop. A listing longer than the client's MaxPages, or whose next
// page does not move forward, fails.
func EachPage[T any](ctx context.Context, c *Client, path string, query url.Values, fn func([]T) (stop bool, err error)) error {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	q.Set("per_page", strconv.Itoa(perPage))
	for page, pages := 1, 1; ; pages++ {
		q.Set("page", strconv.Itoa(page))
		var items []T
		resp, err := c.GetJSON(ctx, Request{Method: http.MethodGet, Path: path, Query: q, Auth: true}, &items)
		if err != nil {
			return err
		}
		stop, err := fn(items)
		if err != nil || stop {
			return err
		}
		next := resp.Header.Get("X-Next-Page")
		if next == "" || len(items) == 0 {
			return nil
		}
		n, err := strconv.Atoi(next)
		switch {
		case err != nil || n <= page:
			return fmt.Errorf("gitlab GET %s: page %d names %q as the next page", path, page, c.Scrub(clip.Runes(next, 40)))
		case pages >= c.maxPages:
			return fmt.Errorf("gitlab GET %s: listing longer than %d pages of %d; not read further", path, c.maxPages, perPage)
		}
		page = n
	}
}

// excerpt quotes the start of an error answer: GitLab's {"message": …} or {"error": …} when
// present, else the text; bounded, valid UTF-8 and scrubbed.
func (c *Client) excerpt(b []byte) string {
	var e struct {
		Message          json.RawMessage `json:"message"`
		Error            string          `json:"error"`
		ErrorDescription string          `json:"error_description"`
	}
	s := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil {
		switch {
		case len(e.Message) > 0:
			var m string
			if json.Unmarshal(e.Message, &m) == nil {
				s = m
			} else {
				s = string(e.Message) // {"base": ["Reference not found"]}
			}
		case e.ErrorDescription != "":
			s = e.Error + ": " + e.ErrorDescription
		case e.Error != "":
			s = e.Error
		}
	}
	if len(s) > maxExcerpt {
		s = s[:maxExcerpt]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return c.Scrub(strings.ToValidUTF8(s, "?"))
}

// RetryAfter reads how long a 429 asks to wait: Retry-After (seconds or an HTTP date),
// else GitLab's RateLimit-Reset (a Unix time), else a minute.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if d, ok := httpwait.RetryAfter(h, now); ok {
		return d
	}
	if t, ok := httpwait.ResetAt(h, "RateLimit-Reset"); ok {
		return max(t.Sub(now), 0)
	}
	return defaultRateLimitWait
}

// noteRateLimit records RateLimit-Remaining and, when it reaches 0, pauses calls until
// RateLimit-Reset, so that the next call does not earn a 429.
func (c *Client) noteRateLimit(resp *http.Response) {
	v := resp.Header.Get("RateLimit-Remaining")
	if v == "" {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return
	}
	c.remaining.Store(int64(n))
	if resp.StatusCode != http.StatusTooManyRequests {
		reset, _ := httpwait.ResetAt(resp.Header, "RateLimit-Reset")
		c.pause.Spent(int64(n), reset, c.now())
	}
}

// Remaining is the RateLimit-Remaining GitLab last reported, -1 when unknown.
func (c *Client) Remaining() int64 { return c.remaining.Load() }

// Limited reports whether calls are paused, and until when.
func (c *Client) Limited() (time.Time, bool) { return c.pause.Until(c.now()) }

// Scrub replaces the client's credentials with "***".
func (c *Client) Scrub(s string) string { return c.scrubber.Replace(s) }

// CloseIdleConnections drops the client's idle connections.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }
