package preview

import (
	"regexp"
	"strings"

	"github.com/trueup-dev/trueup/actions"
)

// minScrubbed is the length below which a resolved value is not scrubbed from a plan: a
// value of one to three characters ("3", "eu", "on") is found in most texts, and replacing
// each of its occurrences would garble the plan while hiding little (such a value is
// guessed in a few tries anyway).
const minScrubbed = 4

// sanitize cleans what a plugin returned for a plan (its text, summary or error) before a
// preview stores or posts it, for readers who may see the pull request but not what the
// controller resolved for it or where it keeps its files:
//
//   - source snippets of Terraform diagnostics go (`on FILE line N:` and the quoted lines
//     under it: Terraform quotes the var file, that is the whole resolved spec, and a
//     validation's `var.x is "…"`),
//   - every resolved output value (values) becomes ***,
//   - absolute paths are cut to their last element (…/spec.tfvars.json): the controller's
//     working folders are nobody's business on a forge,
//   - the controller's secrets are scrubbed (secrets, nil for none).
func sanitize(s string, values []string, secrets func(string) string) string {
	s = stripSnippets(s)
	s = scrubValues(values)(s)
	s = cutPaths(s)
	if secrets != nil {
		s = secrets(s)
	}
	return s
}

// scrubValues returns a function replacing each value of at least minScrubbed bytes (as
// written, JSON- and URL-escaped) with ***.
func scrubValues(values []string) func(string) string {
	var long []string
	for _, v := range values {
		if len(v) >= minScrubbed {
			long = append(long, v)
		}
	}
	return actions.Scrubber(long)
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

// absPath is an absolute path of two elements or more, not inside a URL or a word: it
// starts the text or follows a space, a quote, a bracket, = or ,.
var absPath = regexp.MustCompile(`(^|[\s"'` + "`" + `(\[{<=,])((?:/[A-Za-z0-9._@%+~-]+){2,})/?`)

// cutPaths cuts every absolute path to its last element, behind "…/".
func cutPaths(s string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	return absPath.ReplaceAllStringFunc(s, func(m string) string {
		sub := absPath.FindStringSubmatch(m)
		p := strings.TrimSuffix(sub[2], "/")
		return sub[1] + "…/" + p[strings.LastIndexByte(p, '/')+1:]
	})
}
