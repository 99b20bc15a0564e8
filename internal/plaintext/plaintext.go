// Package plaintext owns one rule of transport hygiene (issue 10, point 7): a credential is
// never sent over an unencrypted transport (http://, git://) to another machine unless the
// endpoint's config says `insecure: true`.
//
// Loopback hosts (localhost, 127.0.0.0/8, ::1) are allowed without `insecure`: traffic to
// them never leaves the machine, so a credential sent there crosses no network. That is the
// case of a local sidecar or proxy that holds the TLS connection, and of the httptest fakes
// that the tests run against.
//
// Every endpoint that carries a credential (Git sources, the GitHub App token exchange, the
// commit status forge, the http, githubActions and gitlab actions) checks its URL here when
// its config is validated, so trueup refuses to start rather than leak the credential on
// the first call.
//
// A redirect can undo that check at run time, so the package also owns the redirect rule
// (Redirect, CheckRedirect in redirect.go): no https:// to http:// to another machine unless
// insecure, no credentials to another host. Where each client stands: the GitHub App token
// exchange (unless its caller sets a policy), the http action and the github-actions
// artifact downloads apply it; the gitlab action, the commit status reporter and the GitHub
// API client follow no redirect at all; the Git source relies on go-git's transport, which
// refuses every https→http redirect and strips credentials when a redirect leaves the
// origin (pinned by a test in sources/gitsource).
package plaintext

import (
	"fmt"
	"net"
	"strings"
)

// Unencrypted reports whether a URL scheme (or go-git protocol) carries data in clear.
func Unencrypted(scheme string) bool {
	switch strings.ToLower(scheme) {
	case "http", "git":
		return true
	}
	return false
}

// Loopback reports whether host (a name or an IP, without port or brackets) is this machine:
// "localhost", an address in 127.0.0.0/8, or ::1.
func Loopback(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Check returns an error when a credential would travel over scheme in clear to host and the
// endpoint is not marked insecure. field names the URL in the config ("url", "baseURL",
// "sources[0].git.url"), credential what would be sent ("the token"); both only serve the
// message, which says how to fix the config. The host is not a secret; the URL, which may
// hold user info, is never quoted.
func Check(field, scheme, host, credential string, hasCredential, insecure bool) error {
	if !hasCredential || insecure || !Unencrypted(scheme) || Loopback(host) {
		return nil
	}
	fix := "use https://"
	if strings.EqualFold(scheme, "git") {
		fix = "use https:// or ssh://"
	}
	return fmt.Errorf("%s: %s:// would send %s unencrypted to %s; %s, or set insecure: true for this endpoint if the network to %s is trusted",
		field, strings.ToLower(scheme), credential, host, fix, host)
}
