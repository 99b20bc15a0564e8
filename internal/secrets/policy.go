package secrets

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/internal/config"
)

// MaxNameLength bounds a secret name and a key.
const MaxNameLength = 253

var (
	// nameRe: lowercase alphanumeric runs joined by single '-' or '.', like a DNS subdomain
	// without empty labels. No '/', no "..", no leading dot: a name is one path segment.
	nameRe = regexp.MustCompile(`^[a-z0-9]+([.-][a-z0-9]+)*$`)
	// keyRe: alphanumeric runs joined by single '.', '_' or '-' (password, DB_PASSWORD, tls.crt).
	keyRe = regexp.MustCompile(`^[A-Za-z0-9]+([._-][A-Za-z0-9]+)*$`)
)

// CheckName reports why name is not a valid secret name.
func CheckName(name string) error {
	if len(name) > MaxNameLength || !nameRe.MatchString(name) {
		return fmt.Errorf("secret name %q must be lowercase letters and digits joined by single '-' or '.' (at most %d)", name, MaxNameLength)
	}
	return nil
}

// CheckKey reports why key is not a valid key.
func CheckKey(key string) error {
	if len(key) > MaxNameLength || !keyRe.MatchString(key) {
		return fmt.Errorf("secret key %q must be letters and digits joined by single '.', '_' or '-' (at most %d)", key, MaxNameLength)
	}
	return nil
}

// Exposer decides which store a reference resolves from: the first rule, in config order,
// whose names, sources and namespaces all match. It never looks at the stores, so its
// answer cannot tell whether a secret exists.
func Exposer(rules []config.SecretExpose, name, source, namespace string) (store string, ok bool) {
	for _, r := range rules {
		if matchAny(r.Names, name) && matchAny(r.Sources, source) && matchAny(r.Namespaces, namespace) {
			return r.Store, true
		}
	}
	return "", false
}

// matchAny reports whether v equals a pattern or matches it as a path.Match glob.
func matchAny(patterns []string, v string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return config.Match(p, v) })
}

// EnvVar maps a reference to the variable an env store reads: prefix + NAME + "__" + KEY,
// where NAME is the name upper-cased with '-' turned into '_', and KEY the key upper-cased
// with '-' and '.' turned into '_'. Names and keys never hold two separators in a row, so
// "__" splits them unambiguously, and distinct names map to distinct variables (a name
// with a '.' is refused: it would share variables with its '-' spelling). Keys differing
// only in case or separator share a variable, which is harmless: they belong to one name.
func EnvVar(prefix, name, key string) (string, error) {
	if strings.Contains(name, ".") {
		return "", fmt.Errorf("secret name %q: an env store takes names without '.'", name)
	}
	up := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch r {
			case '-', '.':
				return '_'
			}
			if 'a' <= r && r <= 'z' {
				return r - 'a' + 'A'
			}
			return r
		}, s)
	}
	return prefix + up(name) + "__" + up(key), nil
}

// FilePath is where a file store keeps a key, relative to its folder: NAME/KEY. Valid names
// and keys are single segments that cannot be "." or "..", so the result stays inside.
func FilePath(name, key string) string { return name + "/" + key }

// VaultPath is the KV v2 read path of a name: {mount}/data/{pathPrefix}{name}.
func VaultPath(mount, pathPrefix, name string) string {
	return strings.Trim(mount, "/") + "/data/" + pathPrefix + name
}
