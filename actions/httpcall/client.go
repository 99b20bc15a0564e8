package httpcall

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/httpwait"
	"github.com/trueup-dev/trueup/internal/plaintext"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of an exchange.
const (
	maxBody    = 1 << 20 // bytes of an answer read
	maxExcerpt = 512     // bytes of an error answer quoted in errors
	// maxBackoff caps the wait between two tries of one call.
	maxBackoff = 10 * time.Second
	// maxRetryAfter is the longest Retry-After honoured inside a call; a longer one ends the
	// call with a requeue at that time, so that a worker is not held.
	maxRetryAfter = 10 * time.Second
)

// Request headers set by the plugin.
const (
	headerOperation = "X-Trueup-Operation"
	headerSignature = "X-Trueup-Signature-256"
	headerIdemKey   = "Idempotency-Key"
)

// reply is an answer the retries did not absorb.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// statusError is an answer that ends a call: a 4xx, or a 5xx/408/429 after the last try.
type statusError struct {
	method  string
	url     string // display form
	status  int
	excerpt string // bounded and scrubbed
	tries   int
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("%s %s: %d %s", e.method, e.url, e.status, http.StatusText(e.status))
	if e.excerpt != "" {
		s += ": " + e.excerpt
	}
	if e.tries > 1 {
		s += fmt.Sprintf(" (after %d tries)", e.tries)
	}
	return s
}

// retryLaterError reports a Retry-After too long to wait inside the call.
type retryLaterError struct {
	after  time.Duration
	status int
}

func (e *retryLaterError) Error() string {
	return fmt.Sprintf("the provisioner answered %d and asked to retry after %s", e.status, e.after)
}

// outgoing is one request to send (and resend).
type outgoing struct {
	method string
	url    *url.URL
	body   []byte // nil for GET
	op     string
	key    string              // Idempotency-Key; "" for none
	scrub  func(string) string // the instance's and the call's secrets
	// final lists statuses returned at once instead of retried (501 to a plan: the
	// provisioner does not plan, which no retry changes).
	final map[int]bool
}

// exchange sends o, retrying transient failures (connection errors, 408, 429, 5xx) with
// exponential backoff, and returns the first answer that is not transient. The body and
// the Idempotency-Key are the same on every try.
func (a *Action) exchange(ctx context.Context, o outgoing) (reply, error) {
	for try := 1; ; try++ {
		r, err := a.once(ctx, o)
		if ctx.Err() != nil {
			return reply{}, fmt.Errorf("%s %s: %w", o.method, display(o.url), context.Cause(ctx))
		}
		if err == nil && (!transient(r.status) || o.final[r.status]) {
			return r, nil
		}
		var wait time.Duration
		if err == nil {
			if ra, ok := httpwait.RetryAfter(r.header, time.Now()); ok && (r.status == http.StatusTooManyRequests || r.status == http.StatusServiceUnavailable) {
				if ra > maxRetryAfter {
					return reply{}, &retryLaterError{after: ra, status: r.status}
				}
				wait = ra
			}
			err = &statusError{method: o.method, url: display(o.url), status: r.status, excerpt: excerpt(r.body, o.scrub), tries: try}
		}
		if try >= a.attempts {
			return reply{}, err
		}
		if wait == 0 {
			wait = backoff(a.initial, try)
		}
		a.logger.WarnContext(ctx, "http call failed; retrying", "method", o.method, "url", display(o.url), "try", try,
			"wait", wait, "err", o.scrub(err.Error()))
		if err := a.sleep(ctx, wait); err != nil {
			return reply{}, fmt.Errorf("%s %s: %w", o.method, display(o.url), err)
		}
	}
}

// once sends o one time.
func (a *Action) once(ctx context.Context, o outgoing) (reply, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	var body io.Reader
	if o.body != nil {
		body = bytes.NewReader(o.body)
	}
	req, err := http.NewRequestWithContext(ctx, o.method, o.url.String(), body)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", o.method, display(o.url), err)
	}
	for k, v := range a.headers {
		req.Header[k] = v
	}
	if o.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "trueup")
	req.Header.Set(headerOperation, o.op)
	if o.key != "" {
		req.Header.Set(headerIdemKey, o.key)
	}
	if a.secret != nil {
		req.Header.Set(headerSignature, sign(a.secret, o.body))
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		// url.Error quotes the whole URL, query and credentials included.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return reply{}, fmt.Errorf("%s %s: %w", o.method, display(o.url), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: read answer: %w", o.method, display(o.url), err)
	}
	if len(b) > maxBody && resp.StatusCode/100 == 2 {
		return reply{}, fmt.Errorf("%s %s: answer larger than %d MiB", o.method, display(o.url), maxBody>>20)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// sign is the X-Trueup-Signature-256 value of body.
func sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func transient(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// backoff is the wait before try+1: initial doubled per try, capped, with equal jitter.
func backoff(initial time.Duration, try int) time.Duration {
	d := initial << min(try-1, 20)
	if d <= 0 || d > maxBackoff {
		d = maxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// excerpt quotes the start of an answer: scrubbed, then bounded (a secret straddling the cut
// would otherwise leave a piece), valid UTF-8.
func excerpt(b []byte, scrub func(string) string) string {
	s := scrub(strings.ToValidUTF8(strings.TrimSpace(string(b)), "?"))
	if len(s) > maxExcerpt {
		s = s[:maxExcerpt]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// scrub replaces header values and the signing secret with "***".
func (a *Action) scrub(s string) string {
	if a.scrubber == nil {
		return s
	}
	return a.scrubber.Replace(s)
}

// callScrub scrubs the instance's secrets and those of the call (req.Secrets).
func (a *Action) callScrub(req actions.Request) func(string) string {
	if len(req.Secrets) == 0 {
		return a.scrub
	}
	call := req.Scrub()
	return func(s string) string { return call(a.scrub(s)) }
}

// scrubErr removes the credentials from err's message, keeping err in the chain.
func (a *Action) scrubErr(err error) error { return actions.ScrubError(err, a.scrub) }

// checkRedirect follows redirects of GET requests within the configured origin only:
// configured headers (credentials) must not reach another host. Other methods get the
// redirect answer itself, which ends the call. The shared rule (plaintext.CheckRedirect: no
// https→http downgrade, no credentials to another host) is applied first, so that this
// plugin refuses at least what every client refuses; the origin rule is stricter still.
func (a *Action) checkRedirect(req *http.Request, via []*http.Request) error {
	if via[0].Method != http.MethodGet {
		return http.ErrUseLastResponse
	}
	if err := plaintext.CheckRedirect(a.insecure)(req, via); err != nil {
		return err
	}
	if !sameOrigin(req.URL, a.url) {
		return fmt.Errorf("redirect to another origin (%s) refused", req.URL.Scheme+"://"+req.URL.Host)
	}
	return nil
}

func sameOrigin(u, v *url.URL) bool {
	return strings.EqualFold(u.Scheme, v.Scheme) && strings.EqualFold(u.Host, v.Host)
}
