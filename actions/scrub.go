package actions

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// ScrubError returns err with scrub applied to its message (removing secrets a server or a
// command echoed back), keeping err in the chain so that errors.Is, errors.As and IsTerminal
// still see through it. It returns err itself when scrub changes nothing.
func ScrubError(err error, scrub func(string) string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := scrub(msg); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// Scrubber returns a function that replaces every secret, and its JSON- and URL-escaped
// forms, with "***". Longer secrets are replaced first: a secret that
// contains another (a user name inside a token) goes whole, not leaving its tail behind.
func Scrubber(secrets []string) func(string) string {
	seen := map[string]bool{}
	var all []string
	for _, s := range secrets {
		b, _ := json.Marshal(s)
		// As written, JSON-escaped (outputs are scrubbed as encoded JSON), and URL-escaped
		// (a password inside a DSN or a query string).
		for _, v := range []string{s, string(b[1 : len(b)-1]), url.QueryEscape(s), url.PathEscape(s)} {
			if v != "" && !seen[v] {
				seen[v] = true
				all = append(all, v)
			}
		}
	}
	if len(all) == 0 {
		return func(s string) string { return s }
	}
	sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s, "***")
	}
	return strings.NewReplacer(pairs...).Replace
}
