// Package clip shortens text for display and storage: commit ids as Git abbreviates them, and
// messages cut to a size without breaking a character.
package clip

import (
	"strings"
	"unicode/utf8"
)

// RevLen is how many characters of a commit id (or hex digits of a digest) Rev keeps.
const RevLen = 12

// Rev abbreviates a revision: a commit id as Git does in one-line logs (the first 12
// characters), a digest (an OCI artifact's, a folder's content hash) as its algorithm and 12
// hex digits ("sha256:0123456789ab"), which say more than "sha256:0123".
func Rev(rev string) string {
	if alg, digits, ok := strings.Cut(rev, ":"); ok && alg != "" && len(digits) > RevLen {
		return alg + ":" + digits[:RevLen]
	}
	if len(rev) > RevLen {
		return rev[:RevLen]
	}
	return rev
}

// Runes keeps s within n characters, ending with "…" when it cut (GitHub and terminals count
// characters, not bytes). n below 1 is taken as 1.
func Runes(s string, n int) string {
	n = max(n, 1)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// Storable makes s storable in a PostgreSQL text column and at most about n bytes: invalid
// UTF-8 is replaced, NUL bytes (which PostgreSQL refuses) are dropped, and a longer s is cut on
// a character boundary and ends with "…". Messages come from plugins, scripts and forges; one
// unstorable message must not abort the transaction it is written in.
func Storable(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
