package preview

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/internal/redact"
)

// sanitize cleans what a plugin returned for a plan (its text, summary or error) before a
// preview stores or posts it, for readers who may see the pull request but not what the
// controller resolved for it or where it keeps its files. In this order:
//
//   - source snippets of Terraform diagnostics go (`on FILE line N:` and the quoted lines
//     under it: Terraform quotes the var file, that is the whole resolved spec, and a
//     validation's `var.x is "…"`),
//   - every resolved output value (values) and every secret the controller knows (secrets,
//     its Registry.Scrub: nil for none) become ***, as one set, longest first
//     (Registry.With): a controller secret quoting a value (a DSN holding a resolved
//     password) goes whole, not leaving its other parts behind; each line of a value of
//     several lines (a PEM block, a JSON document printed over lines) goes too. This is done
//     before paths are cut: a secret that starts with / (base64 does) would otherwise be cut
//     to its tail,
//   - paths in the controller's folders (roots, and the temp dir) are cut to their last
//     element (…/spec.tfvars.json); other paths (an HTTP path, /usr/bin) are kept.
func sanitize(s string, values []string, secrets *redact.Registry, roots []string) string {
	s = stripSnippets(s)
	s = secrets.With(valueSecrets(values))(s)
	return cutPaths(s, roots)
}

// valueSecrets lists the values of at least redact.MinLength bytes (With scrubs them as
// written, JSON- and URL-escaped); a value of several lines is also listed line by line (each
// trimmed), as a plan may print it indented or quote one line of it.
func valueSecrets(values []string) []string {
	var long []string
	for _, v := range values {
		if len(v) >= redact.MinLength {
			long = append(long, v)
		}
		if !strings.Contains(v, "\n") {
			continue
		}
		for _, l := range strings.Split(v, "\n") {
			if l = strings.TrimSpace(l); len(l) >= redact.MinLength {
				long = append(long, l)
			}
		}
	}
	return long
}

// snippetStart is the first line of a Terraform diagnostic's source snippet, with or without
// the box drawn around diagnostics when -no-color is not given.
var snippetStart = regexp.MustCompile(`^[\s│╷╵]*on .+ line \d+(, in .+)?:\s*$`)

// stripSnippets removes each Terraform source snippet: the `on FILE line N:` line and the
// lines under it up to the next blank one.
func stripSnippets(s string) string {
	if !strings.Contains(s, " line ") {
		return s
	}
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for i := 0; i < len(lines); i++ {
		if !snippetStart.MatchString(lines[i]) {
			out = append(out, lines[i])
			continue
		}
		for i+1 < len(lines) && strings.Trim(lines[i+1], " \t\r│") != "" {
			i++
		}
	}
	return strings.Join(out, "\n")
}

// absPath is an absolute path, not inside a URL or a word: it starts the text or follows a
// space, a quote, a bracket, =, a comma or a colon (PATH=/usr/bin:/var/lib/…).
var absPath = regexp.MustCompile(`(^|[\s"'` + "`" + `(\[{<=,:])((?:/[A-Za-z0-9._@%+~-]+)+)/?`)

// pathChar reports whether b may continue a path's element.
func pathChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || strings.IndexByte("._@%+~-", b) >= 0
}

// cutPaths cuts every path in one of roots (the controller's folders) or in the temp dir to
// its last element, behind "…/"; a root itself becomes "…". Paths elsewhere are kept: they
// are a plan's own (an HTTP path, a binary's folder) and garbling them hides nothing of the
// controller's. A root of two elements or more is also replaced where the path pattern does
// not find it (followed by a space in a folder's name, say).
func cutPaths(s string, roots []string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	var rs []string
	for _, r := range append(slices.Clone(roots), os.TempDir()) {
		if r = filepath.ToSlash(filepath.Clean(r)); strings.HasPrefix(r, "/") && r != "/" {
			rs = append(rs, r)
		}
	}
	// Longest first: a root inside another is cut as the inner one.
	slices.SortFunc(rs, func(a, b string) int { return len(b) - len(a) })
	under := func(p string) bool {
		for _, r := range rs {
			if p == r || strings.HasPrefix(p, r+"/") {
				return true
			}
		}
		return false
	}
	s = absPath.ReplaceAllStringFunc(s, func(m string) string {
		sub := absPath.FindStringSubmatch(m)
		p := sub[2]
		if !under(p) {
			return m
		}
		for _, r := range rs {
			if p == r {
				return sub[1] + "…"
			}
		}
		return sub[1] + "…/" + p[strings.LastIndexByte(p, '/')+1:]
	})
	for _, r := range rs {
		if strings.Count(r, "/") < 2 {
			continue
		}
		var b strings.Builder
		for {
			i := strings.Index(s, r)
			if i < 0 {
				break
			}
			end := i + len(r)
			if end < len(s) && pathChar(s[end]) {
				b.WriteString(s[:end])
			} else {
				b.WriteString(s[:i] + "…")
			}
			s = s[end:]
		}
		s = b.String() + s
	}
	return s
}
