// Package jsonptr owns JSON pointers (RFC 6901) into a spec, as drift policies and actions
// name fields: checking one, escaping a key, and whether one pointer covers another. It has
// no dependencies, so that manifest validation and the API packages can use it without the
// plugins.
package jsonptr

import (
	"fmt"
	"slices"
	"strings"
)

// Check reports whether p is a JSON pointer into a spec: "/" then tokens separated by "/",
// "~" only as "~0" (a "~") or "~1" (a "/"). The whole document ("") is not a field, and is
// refused.
func Check(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q is not a JSON pointer: it must start with \"/\" (such as /tags)", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || p[i+1] != '0' && p[i+1] != '1') {
			return fmt.Errorf("%q is not a JSON pointer: \"~\" must be written ~0 (and \"/\" in a key ~1)", p)
		}
	}
	return nil
}

// Escape makes one key a token of a JSON pointer.
func Escape(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// Tokens returns the unescaped tokens of a pointer that Check accepts.
func Tokens(p string) []string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, t := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return parts
}

// Covers reports whether the pointer outer covers p: equal to it or one of its ancestors,
// token by token ("/tags" covers "/tags/owner", not "/tagsets"). Pointers Check refuses
// cover nothing and are covered by nothing.
func Covers(outer, p string) bool {
	if Check(outer) != nil || Check(p) != nil {
		return false
	}
	ot, pt := Tokens(outer), Tokens(p)
	return len(ot) <= len(pt) && slices.Equal(ot, pt[:len(ot)])
}
