package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// sealer signs small JSON values for cookies: base64url(JSON) "." base64url(HMAC-SHA256).
// The value is readable by its holder (it holds nothing secret: a name, a role, namespaces,
// a login's PKCE verifier that is useless without the code) but cannot be changed or forged
// without the key. purpose is signed with the value, so a login cookie is never accepted as a
// session and the other way round.
type sealer struct {
	key []byte
	now func() time.Time
}

var errBadCookie = errors.New("cookie is not valid")

// seal encodes v, which must carry its own expiry (checked by open through expiry).
func (s sealer) seal(purpose string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(purpose, payload)), nil
}

func (s sealer) mac(purpose, payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// open checks the signature and the expiry and decodes the value into v.
func (s sealer) open(purpose, cookie string, v interface{ expires() time.Time }) error {
	payload, sig, ok := strings.Cut(cookie, ".")
	if !ok {
		return errBadCookie
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(purpose, payload)) {
		return errBadCookie
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, v) != nil {
		return errBadCookie
	}
	if !s.now().Before(v.expires()) {
		return errBadCookie
	}
	return nil
}

// session is what the session cookie says about a signed-in user. It keeps the user's
// groups that the config maps, not the role: the role is decided on every request from the
// current auth.oidc.roles, so a mapping removed from the config takes effect at the restart,
// not when sessions expire.
type session struct {
	Name   string   `json:"n"`
	Email  string   `json:"e,omitempty"` // the verified email claim, for notAuthor
	Groups []string `json:"g"`
	// ID is random per login; the logout form's CSRF token is derived from it.
	ID  string `json:"id"`
	Exp int64  `json:"exp"`
}

func (s *session) expires() time.Time { return time.Unix(s.Exp, 0) }

// loginState is the login cookie: what the callback checks the provider's answer against.
type loginState struct {
	State    string `json:"s"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"v"` // PKCE code verifier
	Next     string `json:"next"`
	Exp      int64  `json:"exp"`
}

func (l *loginState) expires() time.Time { return time.Unix(l.Exp, 0) }
