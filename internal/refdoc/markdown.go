// Package refdoc renders trueup's generated reference pages (docs/reference/): the controller
// config from internal/config's types and comments, the CLI from the cobra command tree, the
// metrics from the Prometheus registry and the HTTP API from the OpenAPI document. It only
// renders; tools/docgen and cmd/trueup's tests decide where the pages are written and check
// that the committed ones are current.
package refdoc

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Header is the first line of every generated page.
func Header(regenerate string) string {
	return "<!-- Generated from the code; do not edit. Regenerate with `" + regenerate + "`. -->\n\n"
}

// cell makes text safe for one Markdown table cell: one line, pipes escaped.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// code wraps s in backticks, using a longer fence when s holds one.
func code(s string) string {
	if s == "" {
		return ""
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// anchor is the fragment mkdocs and GitHub give a heading: lowercase, punctuation dropped,
// spaces as hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ' || r == '-':
			b.WriteRune('-')
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// paragraphs turns a Go doc comment's text into Markdown paragraphs: lines of one paragraph
// joined, blank lines kept between paragraphs.
func paragraphs(text string) string {
	var out []string
	for _, p := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n\n")
}

// Stale compares a committed page with what the generator renders and names the first line
// that differs; nil when they are equal. name is the page's path from the repository root.
func Stale(name string, committed []byte, generated string) error {
	if string(committed) == generated {
		return nil
	}
	have, want := strings.Split(string(committed), "\n"), strings.Split(generated, "\n")
	for i := 0; i < len(have) || i < len(want); i++ {
		var h, w string
		if i < len(have) {
			h = have[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if h != w || i >= len(have) || i >= len(want) {
			return fmt.Errorf("%s is out of date: run make docs\nline %d is\n\t%s\nthe code gives\n\t%s", name, i+1, h, w)
		}
	}
	return fmt.Errorf("%s is out of date: run make docs", name)
}

var fragmentLink = regexp.MustCompile(`\]\(#([^)]*)\)`)

// CheckAnchors reports a page's headings that share an anchor and its #fragment links that
// name no heading of the page.
func CheckAnchors(name, page string) error {
	anchors := map[string]bool{}
	var errs []error
	fenced := false
	for i, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if h := strings.TrimLeft(line, "#"); h != line && strings.HasPrefix(h, " ") {
			a := anchor(strings.TrimSpace(h))
			if anchors[a] {
				errs = append(errs, fmt.Errorf("%s:%d: a second heading with the anchor #%s", name, i+1, a))
			}
			anchors[a] = true
		}
	}
	for _, m := range fragmentLink.FindAllStringSubmatch(page, -1) {
		if !anchors[m[1]] {
			errs = append(errs, fmt.Errorf("%s: the link #%s names no heading", name, m[1]))
		}
	}
	return errors.Join(errs...)
}
