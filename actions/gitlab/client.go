package gitlab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/httpwait"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Response limits.
const (
	maxBody    = 4 << 20 // bytes of a JSON answer read
	maxExcerpt = 512     // bytes of an error answer quoted in errors
	maxPages   = 50      // pages followed in one listing
	perPage    = 100     // GitLab's maximum page size
)

// defaultRateLimitWait is how long calls pause after a 429 that names no reset time.
const defaultRateLimitWait = time.Minute

// apiError is an answer other than 2xx or 429. Its message is bounded and scrubbed.
type apiError struct {
	method  string
	path    string // relative to /api/v4, without query
	status  int
	message string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("gitlab %s %s: %d %s", e.method, e.path, e.status, http.StatusText(e.status))
	if e.message != "" {
		s += ": " + e.message
	}
	return s
}

func isStatus(err error, status int) bool {
	var e *apiError
	return errors.As(err, &e) && e.status == status
}

// rateLimitError reports that GitLab refused a call (429), or that the call was not sent
// because an earlier one was refused and the reset time has not come.
type rateLimitError struct {
	until time.Time
	sent  bool // a 429 came back for this very call
}

func (e *rateLimitError) Error() string {
	return "gitlab rate limit: calls paused until " + e.until.UTC().Format(time.RFC3339)
}

// request is one REST call.
type request struct {
	method string
	path   string     // relative to /api/v4, escaped
	query  url.Values // nil for none
	form   url.Values // sent as the form body when non-nil
	auth   bool       // send the API token
}

// response is a 2xx answer.
type response struct {
	header http.Header
	body   []byte
}

// do sends r unless calls are paused by a rate limit, and returns the 2xx answer.
func (a *Action) do(ctx context.Context, r request) (response, error) {
	if until, ok := a.limited(); ok {
		return response{}, &rateLimitError{until: until}
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()

	target := a.api + r.path
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.form != nil {
		// The trigger token travels in the form body, never in the URL, so that no proxy
		// or error message ever sees it.
		body = strings.NewReader(r.form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return response{}, fmt.Errorf("gitlab %s %s: %w", r.method, r.path, err)
	}
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.auth {
		req.Header.Set("PRIVATE-TOKEN", a.token)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "trueup")

	resp, err := a.hc.Do(req)
	if err != nil {
		// url.Error quotes the URL; ours holds no secret, but the path alone reads better.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return response{}, fmt.Errorf("gitlab %s %s: %w", r.method, r.path, err)
	}
	defer resp.Body.Close()
	a.noteRateLimit(resp)

	if resp.StatusCode == http.StatusTooManyRequests {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxExcerpt))
		until := a.now().Add(retryAfter(resp.Header, a.now()))
		a.pause(until)
		a.logger.Warn("gitlab rate limit reached; pausing calls", "method", r.method, "path", r.path,
			"until", until.UTC().Format(time.RFC3339))
		return response{}, &rateLimitError{until: until, sent: true}
	}
	if resp.StatusCode/100 == 3 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxExcerpt))
		msg := "redirects are not followed (is baseURL right?)"
		if loc, err := resp.Location(); err == nil {
			msg = "redirect to " + loc.Scheme + "://" + loc.Host + " not followed (is baseURL right?)"
		}
		return response{}, &apiError{method: r.method, path: r.path, status: resp.StatusCode, message: a.scrubber.Replace(msg)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return response{}, fmt.Errorf("gitlab %s %s: read answer: %w", r.method, r.path, err)
	}
	if resp.StatusCode/100 != 2 {
		return response{}, &apiError{method: r.method, path: r.path, status: resp.StatusCode, message: a.excerpt(b)}
	}
	if len(b) > maxBody {
		return response{}, fmt.Errorf("gitlab %s %s: answer larger than %d MiB", r.method, r.path, maxBody>>20)
	}
	return response{header: resp.Header, body: b}, nil
}

// noRedirect refuses every redirect: Go would forward PRIVATE-TOKEN, like every custom
// header, to wherever the Location points, and on a 307 or 308 the form body holding the
// trigger token too. GitLab's API answers where it is asked; a redirect means a wrong baseURL
// (http for https, a moved host) or something in between that should not see the tokens.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// getJSON sends r and decodes its answer into out, keeping numbers exact.
func (a *Action) getJSON(ctx context.Context, r request, out any) (response, error) {
	resp, err := a.do(ctx, r)
	if err != nil {
		return resp, err
	}
	dec := json.NewDecoder(bytes.NewReader(resp.body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return resp, fmt.Errorf("gitlab %s %s: decode answer: %w", r.method, r.path, err)
	}
	return resp, nil
}

// eachPage lists a paginated collection, following X-Next-Page, and hands each page to fn
// until fn says stop.
func eachPage[T any](ctx context.Context, a *Action, path string, query url.Values, fn func([]T) (stop bool, err error)) error {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	q.Set("per_page", strconv.Itoa(perPage))
	page := "1"
	for range maxPages {
		q.Set("page", page)
		var items []T
		resp, err := a.getJSON(ctx, request{method: http.MethodGet, path: path, query: q, auth: true}, &items)
		if err != nil {
			return err
		}
		stop, err := fn(items)
		if err != nil || stop {
			return err
		}
		page = resp.header.Get("X-Next-Page")
		if page == "" || len(items) == 0 {
			return nil
		}
	}
	a.logger.Warn("gitlab listing truncated", "path", path, "pages", maxPages)
	return nil
}

// excerpt quotes the start of an error answer: GitLab's {"message": …} or {"error": …} when
// present, else the text; bounded, valid UTF-8 and scrubbed.
func (a *Action) excerpt(b []byte) string {
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
	return a.scrub(strings.ToValidUTF8(s, "?"))
}

// retryAfter reads how long a 429 asks to wait: Retry-After (seconds or an HTTP date),
// else GitLab's RateLimit-Reset (a Unix time), else a minute.
func retryAfter(h http.Header, now time.Time) time.Duration {
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
func (a *Action) noteRateLimit(resp *http.Response) {
	v := resp.Header.Get("RateLimit-Remaining")
	if v == "" {
		return
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return
	}
	a.remaining.Store(int64(n))
	if n == 0 && resp.StatusCode != http.StatusTooManyRequests {
		if t, ok := httpwait.ResetAt(resp.Header, "RateLimit-Reset"); ok && t.After(a.now()) {
			a.pause(t)
		}
	}
}

// limited reports whether calls are paused, and until when.
func (a *Action) limited() (time.Time, bool) {
	a.rateMu.Lock()
	defer a.rateMu.Unlock()
	if a.limitedUntil.IsZero() || !a.now().Before(a.limitedUntil) {
		return time.Time{}, false
	}
	return a.limitedUntil, true
}

// pause holds every call of this instance until t, so that resources waiting on the same
// limit do not each earn their own 429.
func (a *Action) pause(t time.Time) {
	a.rateMu.Lock()
	defer a.rateMu.Unlock()
	if t.After(a.limitedUntil) {
		a.limitedUntil = t
	}
}

// scrub replaces the tokens with "***".
func (a *Action) scrub(s string) string { return a.scrubber.Replace(s) }

// scrubErr removes the credentials from err's message, keeping err in the chain.
func (a *Action) scrubErr(err error) error { return actions.ScrubError(err, a.scrub) }
