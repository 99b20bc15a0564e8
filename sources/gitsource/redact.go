package gitsource

import (
	"net/url"
	"strings"
)

// Redact returns rawURL with the password removed from its userinfo, for logs and errors:
// "https://bot:s3cret@host/x.git" becomes "https://bot@host/x.git". The user name is kept
// because it is usually a plain account name ("git", "x-access-token"), with one exception:
// an http(s) URL whose userinfo has no password carries a token in the user position
// ("https://ghp_xxx@github.com/..."), so that user is replaced by "redacted".
// scp-like addresses (git@host:org/repo) and local paths come back unchanged. A URL that does
// not parse is redacted by position so that a malformed URL cannot leak its password.
func Redact(rawURL string) string {
	i := strings.Index(rawURL, "://")
	if i < 0 {
		// scp-like (user@host:path) has no password syntax; a local path has no userinfo.
		return rawURL
	}
	scheme := strings.ToLower(rawURL[:i])
	// A '#' or '?' in a password makes the parser see a fragment or query holding the '@':
	// then only the positional fallback below is safe.
	if u, err := url.Parse(rawURL); err == nil && u.Scheme != "" &&
		!strings.Contains(u.Fragment, "@") && !strings.Contains(u.RawQuery, "@") {
		if u.RawQuery != "" {
			// A query may carry a token (?private_token=…): keep only its keys.
			q := u.Query()
			for k := range q {
				q[k] = []string{"redacted"}
			}
			u.RawQuery = q.Encode()
		}
		if u.User == nil {
			return u.String()
		}
		_, hasPassword := u.User.Password()
		user := u.User.Username()
		switch {
		case hasPassword:
			u.User = url.User(user)
		case scheme == "http" || scheme == "https":
			u.User = url.User("redacted")
		default:
			return rawURL
		}
		return u.String()
	}
	// Unparsable: everything up to the last '@' of the authority is userinfo. The password
	// may itself contain '/', so search the whole remainder for the last '@'.
	rest := rawURL[i+3:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return rawURL
	}
	userinfo := rest[:at]
	user, _, hasPassword := strings.Cut(userinfo, ":")
	if !hasPassword {
		user = "redacted"
	}
	return rawURL[:i+3] + user + rest[at:]
}

// scrubber removes known secrets from error messages. Errors from go-git, net/http and ssh
// may quote a URL or a server response; the URL handed to go-git never carries credentials,
// and this is the second line of defence.
type scrubber []string

func (s scrubber) scrub(msg string) string {
	for _, secret := range s {
		if secret != "" {
			msg = strings.ReplaceAll(msg, secret, "***")
		}
	}
	return msg
}

// wrap returns err with every secret replaced in its message. errors.Is and errors.As still
// see the original chain. An empty scrubber returns err as it is.
func (s scrubber) wrap(err error) error {
	if err == nil || len(s) == 0 {
		return err
	}
	// Transports quote server responses with their trailing newline.
	return &scrubbedError{msg: strings.TrimSpace(s.scrub(err.Error())), err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
