package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// authenticate checks the first credential present, strongest first: an HMAC of the body
// (GitHub, Gitea/Forgejo, generic), then GitLab's token, then a bearer token. Every
// comparison takes constant time; an empty secret refuses everything (go-github's
// ValidatePayload would skip verification instead).
func authenticate(h http.Header, body []byte, secret string) bool {
	if secret == "" {
		return false
	}
	for _, name := range []string{"X-Hub-Signature-256", "X-Trueup-Signature-256"} {
		if v := h.Get(name); v != "" {
			sig, ok := strings.CutPrefix(v, "sha256=")
			return ok && validHMAC(sig, body, secret)
		}
	}
	// Gitea and Forgejo also send their own header: the bare hex digest.
	for _, name := range []string{"X-Gitea-Signature", "X-Forgejo-Signature"} {
		if v := h.Get(name); v != "" {
			return validHMAC(v, body, secret)
		}
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
