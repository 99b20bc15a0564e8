package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// Authentication checks the first credential present, strongest first: an HMAC of the body
// (GitHub, Gitea/Forgejo, generic), then GitLab's token, then a bearer token. Every
// comparison takes constant time; an empty secret refuses everything (go-github's
// ValidatePayload would skip verification instead).
//
// It comes in two steps so that only a delivery signed by an HMAC costs a body read before
// it is authenticated: authenticateHeader decides every other delivery from its headers.

// hmacHeaders are the signature headers, in the order they are trusted. GitHub's and
// trueup's carry "sha256=<hex>"; Gitea and Forgejo also send their own, the bare hex digest.
var hmacHeaders = []struct {
	name   string
	prefix string
}{
	{"X-Hub-Signature-256", "sha256="},
	{"X-Trueup-Signature-256", "sha256="},
	{"X-Gitea-Signature", ""},
	{"X-Forgejo-Signature", ""},
}

// signed reports whether h carries an HMAC of the body, which then decides alone: a weaker
// credential never rescues a bad signature.
func signed(h http.Header) bool {
	for _, s := range hmacHeaders {
		if h.Get(s.name) != "" {
			return true
		}
	}
	return false
}

// authenticateHeader checks a delivery that is not signed: GitLab's token, then a bearer
// token; a delivery with neither is refused.
func authenticateHeader(h http.Header, secret string) bool {
	if secret == "" {
		return false
	}
	if v := h.Get("X-Gitlab-Token"); v != "" {
		return equalSecret(v, secret)
	}
	if v := h.Get("Authorization"); v != "" {
		tok, ok := cutPrefixFold(v, "Bearer ")
		return ok && equalSecret(strings.TrimSpace(tok), secret)
	}
	return false
}

// authenticateBody checks a signed delivery's HMAC of body.
func authenticateBody(h http.Header, body []byte, secret string) bool {
	if secret == "" {
		return false
	}
	for _, s := range hmacHeaders {
		if v := h.Get(s.name); v != "" {
			sig, ok := strings.CutPrefix(v, s.prefix)
			return ok && validHMAC(sig, body, secret)
		}
	}
	return false
}

func validHMAC(sigHex string, body []byte, secret string) bool {
	sig, err := hex.DecodeString(strings.TrimSpace(sigHex))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}

// equalSecret compares digests, so that not even the secret's length leaks through timing.
func equalSecret(got, secret string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}
