package doccheck

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// Target is where a link points: a file relative to the repository root (slash-separated)
// and an optional anchor within it.
type Target struct {
	File   string
	Anchor string
}

// IsExternal reports whether a link leaves the repository (http:, https:, mailto: or any
// other scheme); such links are not checked.
func IsExternal(target string) bool {
	return scheme.MatchString(target) || strings.HasPrefix(target, "//")
}

// Resolve returns what a relative link found in file from (relative to the repository root)
// points to. A link of only #anchor points into from itself; a link starting with / is
// relative to the repository root, as GitHub reads it. A link that climbs out of the
// repository is an error.
func Resolve(from, link string) (Target, error) {
	if IsExternal(link) {
		return Target{}, fmt.Errorf("%s is an external link", link)
	}
	p, anchor, _ := strings.Cut(link, "#")
	p, _, _ = strings.Cut(p, "?")
	if dec, err := url.PathUnescape(p); err == nil {
		p = dec
	}
	switch {
	case p == "":
		return Target{File: from, Anchor: anchor}, nil
	case strings.HasPrefix(p, "/"):
		p = path.Clean(strings.TrimLeft(p, "/"))
	default:
		p = path.Join(path.Dir(from), p)
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return Target{}, fmt.Errorf("%s leaves the repository", link)
	}
	return Target{File: p, Anchor: anchor}, nil
}
