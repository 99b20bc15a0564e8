package plaintext

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is the chain length after which a client gives up, as net/http does by default
// (a CheckRedirect replaces that default, so it is kept here).
const maxRedirects = 10

// Hop is one redirect as the decision sees it: where the chain started (the origin the
// credentials were configured for), where the last request went, where the next one would
// go, and whether the original request carries credentials.
type Hop struct {
	Origin, From, To *url.URL
	Credentials      bool
	// Insecure is the endpoint's `insecure: true`.
	Insecure bool
	// Count is the number of requests already made in the chain (len(via)).
	Count int
}

// Redirect decides whether a client may follow one redirect. It refuses:
//
//   - a scheme other than http and https;
//   - a downgrade from https:// to http:// unless the target is a loopback host or the
//     endpoint is insecure: the request (its credentials, body and the answer) would cross the
//     network in clear, although the config asked for TLS;
//   - a hop away from the origin's host (another name or port) while the request carries
//     credentials, whatever the scheme: net/http drops Authorization and Cookie on such a hop
//     but forwards every other header (PRIVATE-TOKEN, X-Api-Key, a request signature), and
//     keeps Authorization for a subdomain. The redirect is refused rather than followed
//     without the credentials: the new host would answer 401, or worse serve what an
//     anonymous request gets, and an error naming both hosts says what happened. Moving
//     back to the origin's host later in the chain does not make such a hop acceptable;
//   - more than maxRedirects hops.
//
// http:// to https:// on the same host name is an upgrade, and the same host.
func Redirect(h Hop) error {
	if h.Count >= maxRedirects {
		return fmt.Errorf("redirect: stopped after %d redirects", maxRedirects)
	}
	to := strings.ToLower(h.To.Scheme)
	if to != "http" && to != "https" {
		return fmt.Errorf("redirect to %s://%s refused: not http or https", to, h.To.Host)
	}
	if strings.EqualFold(h.From.Scheme, "https") && to == "http" && !h.Insecure && !Loopback(h.To.Hostname()) {
		return fmt.Errorf("redirect from https://%s to http://%s refused: it would continue unencrypted; fix the URL, or set insecure: true for this endpoint if the network to %s is trusted",
			h.From.Host, h.To.Host, h.To.Hostname())
	}
	if h.Credentials && hostKey(h.Origin) != hostKey(h.To) {
		return fmt.Errorf("redirect from %s to %s refused: the request carries credentials configured for %s only",
			h.Origin.Host, h.To.Host, h.Origin.Host)
	}
	return nil
}

// hostKey is u's host name and port, lowercased, without the scheme's default port, so that
// example.com, EXAMPLE.com:443 (https) and example.com:80 (http) are one host.
func hostKey(u *url.URL) string {
	name := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	port := u.Port()
	if port == "" || port == "443" && strings.EqualFold(u.Scheme, "https") || port == "80" && strings.EqualFold(u.Scheme, "http") {
		return name
	}
	return name + ":" + port
}

// CheckRedirect is an http.Client CheckRedirect that applies Redirect to each hop. insecure
// is the endpoint's `insecure: true`. Clients that follow no redirect at all
// (http.ErrUseLastResponse) are stricter still and need it not.
func CheckRedirect(insecure bool) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) == 0 {
			return nil
		}
		return Redirect(Hop{Origin: via[0].URL, From: via[len(via)-1].URL, To: req.URL,
			Credentials: Credentials(via[0]), Insecure: insecure, Count: len(via)})
	}
}

// plainHeaders are headers that carry no credential. Every other header counts as one:
// credentials travel under names nobody can list (PRIVATE-TOKEN, X-Api-Key, a signature).
var plainHeaders = map[string]bool{
	"Accept": true, "Accept-Encoding": true, "Accept-Language": true, "Cache-Control": true,
	"Content-Type": true, "Content-Length": true, "If-Match": true, "If-None-Match": true,
	"If-Modified-Since": true, "Idempotency-Key": true, "User-Agent": true, "X-Github-Api-Version": true,
}

// Credentials reports whether req carries credentials: user info in its URL, or a header
// outside the few known to carry none.
func Credentials(req *http.Request) bool {
	if req.URL != nil && req.URL.User != nil {
		return true
	}
	for k := range req.Header {
		if !plainHeaders[http.CanonicalHeaderKey(k)] {
			return true
		}
	}
	return false
}
