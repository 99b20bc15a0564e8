// Package doccheck checks trueup's documentation: relative links in README.md and docs/
// resolve to files and headings, the mkdocs.yml nav lists every page, the README stays short,
// and no page carries review labels or history words. Its rules are pure functions over
// file contents; TestRepositoryDocs applies them to the repository.
package doccheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Link is a Markdown link or image target found on a line (1-based).
type Link struct {
	Line   int
	Target string
}

// Heading is a Markdown heading's text (without the #s) on a line (1-based).
type Heading struct {
	Line int
	Text string
}

var (
	// [text](target) and ![alt](target), with an optional "title"; <target> allows spaces.
	inlineLink = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^()\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// [id]: target at the start of a line: a reference definition; [^1]: is a footnote.
	refDef      = regexp.MustCompile(`^ {0,3}\[[^\]^][^\]]*\]:\s*(<[^>]*>|\S+)`)
	atxHeading  = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	setextUnder = regexp.MustCompile(`^ {0,3}(=+|-+)[ \t]*$`)
	htmlAnchor  = regexp.MustCompile(`<a\s[^>]*\b(?:id|name)\s*=\s*"([^"]+)"`)
	fence       = regexp.MustCompile("^( *)(```+|~~~+)")
	// A list item's marker and the spaces after it: its content starts after them.
	listItem = regexp.MustCompile(`^( *)([-*+]|[0-9]{1,9}[.)])( {1,4}|$)`)
	tableRow = regexp.MustCompile(`^ *\|`)
)

// proseLines returns each line of a Markdown document with fenced code blocks blanked and
// inline code spans removed, so that links, headings and phrases are looked for in prose only.
// The slice index is the line number minus one.
func proseLines(src string) []string {
	out, _ := scan(src)
	return out
}

// UnclosedFence returns the line (1-based) of a code fence that is never closed, which turns
// the rest of the document into code, or 0 when every fence is closed.
func UnclosedFence(src string) int {
	_, line := scan(src)
	return line
}

// scan blanks fenced code and strips code spans (proseLines) and reports where a fence left
// open at the end of the document was opened (0: none). A fence may be indented by up to three
// spaces, or up to three more than the content of the list item it is in.
func scan(src string) (prose []string, unclosed int) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	out := make([]string, len(lines))
	var open string  // the fence that opened the current code block, "" outside one
	listIndent := -1 // where the content of the current list item starts, -1 outside a list
	blankBefore := false
	for i, l := range lines {
		blank := strings.TrimSpace(l) == ""
		if open == "" && !blank {
			if m := listItem.FindStringSubmatch(l); m != nil {
				listIndent = len(m[0])
				if m[3] == "" || len(m[3]) == 4 && len(l) > len(m[0]) && l[len(m[0])] == ' ' { // "-" alone, or indented code after it
					listIndent = len(m[1]) + len(m[2]) + 1
				}
			} else if blankBefore && indentOf(l) < listIndent {
				listIndent = -1
			}
		}
		if !blank {
			blankBefore = false
		} else if open == "" {
			blankBefore = true
		}
		if m := fence.FindStringSubmatch(l); m != nil && len(m[1]) <= max(3, listIndent+3) {
			marker := m[2]
			switch {
			case open == "":
				open, unclosed = marker, i+1
				continue
			case marker[0] == open[0] && len(marker) >= len(open) && strings.TrimSpace(l[len(m[0]):]) == "":
				open, unclosed = "", 0
				continue
			}
		}
		if open != "" {
			continue
		}
		out[i] = l
	}
	stripParagraphSpans(out, lines)
	return out, unclosed
}

// indentOf counts the spaces a line starts with.
func indentOf(l string) int {
	return len(l) - len(strings.TrimLeft(l, " "))
}

// stripParagraphSpans removes code spans from the prose lines in place. A code span may go
// across the lines of a paragraph, so spans are matched over each paragraph: lines between
// blank lines, code blocks, headings, list items and table rows, which a span never crosses.
// Line breaks inside a span are kept, so every line keeps its number.
func stripParagraphSpans(prose, raw []string) {
	start := 0
	flush := func(end int) {
		if start >= end {
			return
		}
		joined := strings.Join(prose[start:end], "\n")
		if strings.Contains(joined, "`") {
			copy(prose[start:end], strings.Split(stripCodeSpans(joined), "\n"))
		}
	}
	for i, l := range prose {
		inCode := l == "" && raw[i] != ""
		switch {
		case inCode || strings.TrimSpace(l) == "":
			flush(i)
			start = i + 1
		case atxHeading.MatchString(l) || listItem.MatchString(l) || tableRow.MatchString(l):
			flush(i)
			start = i
			if atxHeading.MatchString(l) || tableRow.MatchString(l) { // a block of one line
				flush(i + 1)
				start = i + 1
			}
		}
	}
	flush(len(prose))
}

// stripCodeSpans removes `code` spans (matched by backtick runs of equal length) from a text,
// each replaced by a space and the line breaks it held.
func stripCodeSpans(l string) string {
	if !strings.Contains(l, "`") {
		return l
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(l, '`')
		if i < 0 {
			b.WriteString(l)
			return b.String()
		}
		n := 0
		for i+n < len(l) && l[i+n] == '`' {
			n++
		}
		run := l[i : i+n]
		end := closingRun(l[i+n:], n)
		if end < 0 { // an unmatched backtick run is literal text
			b.WriteString(l[:i+n])
			l = l[i+n:]
			continue
		}
		b.WriteString(l[:i])
		b.WriteString(" ")
		b.WriteString(strings.Repeat("\n", strings.Count(l[i+n:i+n+end], "\n")))
		l = l[i+n+end+len(run):]
	}
}

// closingRun returns where in s a backtick run of exactly n starts, or -1.
func closingRun(s string, n int) int {
	for off := 0; off < len(s); {
		i := strings.IndexByte(s[off:], '`')
		if i < 0 {
			return -1
		}
		j := off + i
		k := j
		for k < len(s) && s[k] == '`' {
			k++
		}
		if k-j == n {
			return j
		}
		off = k
	}
	return -1
}

// Links returns the link and image targets of a Markdown document outside code.
func Links(src string) []Link {
	var links []Link
	for i, l := range proseLines(src) {
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			links = append(links, Link{Line: i + 1, Target: strings.Trim(m[1], "<>")})
		}
		if m := refDef.FindStringSubmatch(l); m != nil {
			links = append(links, Link{Line: i + 1, Target: strings.Trim(m[1], "<>")})
		}
	}
	return links
}

// Headings returns the ATX (# Title) and setext (Title over === or ---) headings of a
// Markdown document outside code.
func Headings(src string) []Heading {
	var hs []Heading
	raw := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	lines := proseLines(src)
	for i, l := range lines {
		if m := atxHeading.FindStringSubmatch(l); m != nil {
			// Headings are read from the raw line: code spans count in their anchor.
			rm := atxHeading.FindStringSubmatch(raw[i])
			if rm == nil {
				rm = m
			}
			hs = append(hs, Heading{Line: i + 1, Text: strings.TrimSpace(rm[2])})
			continue
		}
		if i > 0 && setextUnder.MatchString(l) && strings.TrimSpace(lines[i-1]) != "" &&
			!atxHeading.MatchString(lines[i-1]) && !setextUnder.MatchString(lines[i-1]) &&
			!strings.HasPrefix(strings.TrimSpace(lines[i-1]), "|") {
			hs = append(hs, Heading{Line: i, Text: strings.TrimSpace(raw[i-1])})
		}
	}
	return hs
}

// Anchor returns the anchor GitHub gives a heading: its rendered text lowercased, every
// character but letters, digits, spaces, hyphens and underscores dropped, spaces turned
// into hyphens.
func Anchor(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "]") // [text](url) → [text]
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Anchors returns the set of anchors a document defines: one per heading, a repeated one
// suffixed -1, -2… as GitHub does, plus the ids of <a id="…"> or <a name="…"> tags.
func Anchors(src string) map[string]bool {
	set := map[string]bool{}
	seen := map[string]int{}
	for _, h := range Headings(src) {
		a := Anchor(h.Text)
		if n := seen[a]; n > 0 {
			seen[a]++
			set[a+"-"+strconv.Itoa(n)] = true
			continue
		}
		seen[a] = 1
		set[a] = true
	}
	for _, l := range proseLines(src) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			set[m[1]] = true
		}
	}
	return set
}
