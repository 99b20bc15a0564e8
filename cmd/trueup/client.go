package main

import (
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

	"github.com/trueup-dev/trueup/internal/store"
)

// defaultServer is where the API commands look when neither --server nor TRUEUP_SERVER says.
const defaultServer = "http://127.0.0.1:8080"

// requestTimeout bounds one API call; a list follows pages with one call each.
const requestTimeout = 30 * time.Second

// apiOptions are the flags every API command shares (the persistent --server).
type apiOptions struct {
	server string
	token  string
	// serverChanged reports whether --server was given (else the context file may say).
	serverChanged func() bool
}

// serverDefault is the --server default: TRUEUP_SERVER, else the local controller.
func serverDefault() string {
	if v := getenv("TRUEUP_SERVER"); v != "" {
		return v
	}
	return defaultServer
}

// client reads trueup's read-only HTTP API (DESIGN §9).
type client struct {
	base *url.URL
	http *http.Client
}

func (o *apiOptions) client() (*client, error) {
	server, token, insecure, err := o.credentials()
	if err != nil {
		return nil, err
	}
	raw := strings.TrimSpace(server)
	if raw == "" {
		raw = defaultServer
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw // host:port, as serve's --listen takes it
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want a URL such as %s", server, defaultServer)
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
	return &client{base: u, http: hc}, nil
}

// get decodes the JSON answer of GET path?query into v. The API's {"error": …} becomes the
// error's text, so main prints it as "trueup: <message>".
func (c *client) get(ctx context.Context, path string, query url.Values, v any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	target := c.base.String() + path // path is escaped already
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "trueup-cli/"+version)
	resp, err := c.http.Do(req)
	if err != nil {
		return c.unreachable(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return &apiError{status: resp.StatusCode, msg: e.Error}
		}
		return fmt.Errorf("GET %s: %s (is %s a trueup API?)", path, resp.Status, c.base)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: unexpected answer (is %s a trueup API?): %w", path, c.base, err)
	}
	return nil
}

// apiError is an error the API answered with; its text is the API's own message.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.status == http.StatusNotFound
}

// unreachable turns a transport error into a hint about where the CLI looked.
func (c *client) unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach the trueup API at %s: connection refused (is `trueup serve` running? point --server or TRUEUP_SERVER at it)", c.base)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the trueup API at %s did not answer within %s", c.base, requestTimeout)
	}
	return fmt.Errorf("cannot reach the trueup API at %s: %w", c.base, err)
}

// rawList is a list answer: its items kept as the API's JSON, for -o json and yaml.
type rawList struct {
	Items    []json.RawMessage `json:"items"`
	Continue string            `json:"continue"`
}

// list fetches a list endpoint that answers in one page (types, sources, events, history).
func (c *client) list(ctx context.Context, path string, query url.Values) ([]json.RawMessage, error) {
	var page rawList
	if err := c.get(ctx, path, query, &page); err != nil {
		return nil, err
	}
	return page.Items, nil
}

// listResources follows the continue tokens until every matching resource is read.
func (c *client) listResources(ctx context.Context, query url.Values, chunk int) ([]json.RawMessage, error) {
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
	for pages := 0; ; pages++ {
		var page rawList
		if err := c.get(ctx, "/api/v1/resources", q, &page); err != nil {
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

// decodeItems unmarshals raw API items into their Go shape for tables.
func decodeItems[T any](raw []json.RawMessage) ([]T, error) {
	out := make([]T, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return nil, fmt.Errorf("decode item %d: %w", i, err)
		}
	}
	return out, nil
}

// resourcePath is the API path of one resource.
func resourcePath(namespace, kind, name string) string {
	return "/api/v1/resources/" + url.PathEscape(namespace) + "/" + url.PathEscape(kind) + "/" + url.PathEscape(name)
}

// getResource fetches one resource.
func (c *client) getResource(ctx context.Context, namespace, kind, name string) (store.Resource, error) {
	var r store.Resource
	err := c.get(ctx, resourcePath(namespace, kind, name), nil, &r)
	return r, err
}

// parseObjectRef splits KIND/NAME; the kind is case-insensitive on the server.
func parseObjectRef(s string) (kind, name string, err error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q: want KIND/NAME, e.g. DatabaseCluster/orders-pg", s)
	}
	return kind, name, nil
}
