package actions

import (
	"fmt"
	"path"
	"strings"
)

// Allowlist is an instance config's restriction on what a ResourceType's `with:` may set
// (allowedRefs, allowedVariables): the types live in Git, the instance's credentials do not,
// so a commit must not choose what runs with them. A nil Allowlist (the key absent) allows
// everything; an empty one allows nothing.
type Allowlist []string

// CheckPatterns reports the first pattern of l that is not a valid glob; key names the config
// field in the error.
func (l Allowlist) CheckPatterns(key string) error {
	for _, p := range l {
		if p == "" {
			return fmt.Errorf("config: %s: empty entry", key)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("config: %s: %q is not a valid pattern: %w", key, p, err)
		}
	}
	return nil
}

// Allows reports whether v matches an entry of l: an exact value or a path.Match glob, whose
// * stops at a slash (release/* allows release/1.2, not release/1.2/hotfix).
func (l Allowlist) Allows(v string) bool {
	if l == nil {
		return true
	}
	for _, p := range l {
		if p == v {
			return true
		}
		if ok, err := path.Match(p, v); err == nil && ok {
			return true
		}
	}
	return false
}

// Check returns a terminal error naming field when v is not allowed:
// `with.ref: "evil" is not in the action's allowedRefs [main release/*]`. The resource is
// Stalled until its type changes or the instance config allows v.
func (l Allowlist) Check(field, v, key string) error {
	if l.Allows(v) {
		return nil
	}
	return Terminalf("%s: %q is not in the action's %s [%s]", field, v, key, strings.Join(l, " "))
}
