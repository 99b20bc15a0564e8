// Package apiclient is a Go client of trueup's HTTP API (DESIGN §9): reads, lists that follow
// continue tokens, and operator commands, with the API's {"error": …} answers as errors and a
// bearer token sent only to the API's own host. The CLI (cmd/trueup) is its first user; where
// the server URL and the token come from (flags, environment, context file) is the caller's
// business.
package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trueup-dev/trueup/internal/plaintext"
	"github.com/trueup-dev/trueup/internal/wire"
)

// DefaultServer is where a client looks when it is given no server.
const DefaultServer = "http://127.0.0.1:8080"

// RequestTimeout bounds one API call; a list follows pages with one call each.
const RequestTimeout = 30 * time.Second

// Client talks to one trueup API.
type Client struct {
	base      *url.URL
	http      *http.Client
	userAgent string
	// inProcess: the API is the handler of this process, base a name only (messages say
	// "the API").
	inProcess bool
}

// New returns a client of the API at server (a URL, or host:port as serve's --listen takes
// it; "" is DefaultServer). A token is sent as a bearer token to that host only, and never in
// clear to another machine unless insecure says so.
func New(server, token string, insecure bool, userAgent string) (*Client, error) {
	raw := strings.TrimSpace(server)
	if raw == "" {
		raw = DefaultServer
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want a URL such as %s", server, DefaultServer)
	}
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.RawPath, "/")
	u.RawQuery, u.Fragment = "", ""
	hc := &http.Client{}
	if token != "" {
		if err := checkTokenTransport(u.Scheme, u.Hostname(), insecure); err != nil {
			return nil, err
		}
		hc.Transport = bearer{token: token, host: u.Host, base: http.DefaultTransport}
	}
	return &Client{base: u, http: hc, userAgent: userAgent}, nil
}

// NewInProcess returns a client whose requests go through rt, paths relative to base (the
// API's own handler called in process, as trueup serve's /mcp does).
func NewInProcess(base string, rt http.RoundTripper, userAgent string) *Client {
	u, _ := url.Parse(base)
	return &Client{base: u, http: &http.Client{Transport: rt}, userAgent: userAgent, inProcess: true}
}

// Get decodes the JSON answer of GET path?query (path escaped already) into v.
func (c *Client) Get(ctx context.Context, path string, query url.Values, v any) error {
	return c.do(ctx, http.MethodGet, path, query, nil, v, 256<<20)
}

// Post sends an operator command: POST path?query with body as JSON (nil: no body), and
// decodes the JSON answer (any 2xx) into v (nil: ignored).
func (c *Client) Post(ctx context.Context, path string, query url.Values, body, v any) error {
	return c.do(ctx, http.MethodPost, path, query, body, v, 16<<20)
}

func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, v any, limit int64) error {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	target := c.base.String() + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if rd != nil || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	ok := resp.StatusCode == http.StatusOK
	if method != http.MethodGet {
		ok = resp.StatusCode/100 == 2
	}
	if !ok {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return &Error{Status: resp.StatusCode, Msg: e.Error}
		}
		if c.inProcess {
			return fmt.Errorf("%s %s: the API answered %s", method, path, resp.Status)
		}
		return fmt.Errorf("%s %s: %s (is %s a trueup API?)", method, path, resp.Status, c.base)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		if c.inProcess {
			return fmt.Errorf("%s %s: unexpected answer of the API: %w", method, path, err)
		}
		return fmt.Errorf("%s %s: unexpected answer (is %s a trueup API?): %w", method, path, c.base, err)
	}
	return nil
}

// Error is an error the API answered with; its text is the API's own message.
type Error struct {
	Status int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// unreachable turns a transport error into a hint about where the client looked.
func (c *Client) unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if c.inProcess {
		return fmt.Errorf("the API: %w", err)
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach the trueup API at %s: connection refused (is `trueup serve` running? point --server or TRUEUP_SERVER at it)", c.base)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the trueup API at %s did not answer within %s", c.base, RequestTimeout)
	}
	return fmt.Errorf("cannot reach the trueup API at %s: %w", c.base, err)
}

// RawList is a list answer: its items kept as the API's JSON (for -o json and yaml).
type RawList struct {
	Items    []json.RawMessage `json:"items"`
	Continue string            `json:"continue"`
}

// List fetches a list endpoint that answers in one page (types, sources, events, history).
func (c *Client) List(ctx context.Context, path string, query url.Values) ([]json.RawMessage, error) {
	var page RawList
	if err := c.Get(ctx, path, query, &page); err != nil {
		return nil, err
	}
	return page.Items, nil
}

// ListResources follows the continue tokens until every matching resource is read.
func (c *Client) ListResources(ctx context.Context, query url.Values, chunk int) ([]json.RawMessage, error) {
	q := url.Values{}
	for k, v := range query {
		if len(v) > 0 && v[0] != "" {
			q[k] = v
		}
	}
	if chunk > 0 {
		q.Set("limit", strconv.Itoa(chunk))
	}
	var items []json.RawMessage
	for {
		var page RawList
		if err := c.Get(ctx, "/api/v1/resources", q, &page); err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
		if page.Continue == "" || len(page.Items) == 0 {
			return items, nil
		}
		if page.Continue == q.Get("continue") {
			return nil, errors.New("the API returned the same continue token twice: stopping")
		}
		q.Set("continue", page.Continue)
	}
}

// DecodeItems unmarshals raw API items into their Go shape.
func DecodeItems[T any](raw []json.RawMessage) ([]T, error) {
	out := make([]T, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("decode item %d: %w", i, err)
		}
	}
	return out, nil
}

// ResourcePath is the API path of one resource.
func ResourcePath(namespace, kind, name string) string {
	return "/api/v1/resources/" + url.PathEscape(namespace) + "/" + url.PathEscape(kind) + "/" + url.PathEscape(name)
}

// GetResource fetches one resource.
func (c *Client) GetResource(ctx context.Context, namespace, kind, name string) (wire.Resource, error) {
	var r wire.Resource
	err := c.Get(ctx, ResourcePath(namespace, kind, name), nil, &r)
	return r, err
}

// ResourceSetFilter selects ResourceSets; empty fields match everything.
type ResourceSetFilter struct{ Namespace, Source string }

// ResourceSets lists the ResourceSets the caller sees, by namespace and name.
func (c *Client) ResourceSets(ctx context.Context, f ResourceSetFilter) ([]wire.ResourceSet, error) {
	q := url.Values{}
	if f.Namespace != "" {
		q.Set("namespace", f.Namespace)
	}
	if f.Source != "" {
		q.Set("source", f.Source)
	}
	var list struct {
		Items []wire.ResourceSet `json:"items"`
	}
	err := c.Get(ctx, "/api/v1/resourcesets", q, &list)
	return list.Items, err
}

// ResourceSet fetches one ResourceSet.
func (c *Client) ResourceSet(ctx context.Context, namespace, name string) (wire.ResourceSet, error) {
	var rs wire.ResourceSet
	err := c.Get(ctx, "/api/v1/resourcesets/"+url.PathEscape(namespace)+"/"+url.PathEscape(name), nil, &rs)
	return rs, err
}

// bearer adds the token to requests for the API's own host only: a redirect elsewhere
// does not carry it.
type bearer struct {
	token string
	host  string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != b.host || r.Header.Get("Authorization") != "" {
		return b.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// checkTokenTransport refuses to send a token in clear to another machine.
func checkTokenTransport(scheme, host string, insecure bool) error {
	if err := plaintext.Check("--server", scheme, host, "the token", true, insecure); err != nil {
		return fmt.Errorf("%w (insecure: true goes in the context file)", err)
	}
	return nil
}
