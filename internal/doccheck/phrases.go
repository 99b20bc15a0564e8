package doccheck

import (
	"regexp"
	"strings"
)

// Phrase is a forbidden phrase found on a line (1-based): what matched and why it is refused.
type Phrase struct {
	Line  int
	Match string
	Why   string
}

// forbidden lists what user documentation must not say. Each pattern is chosen to match no
// legitimate present-tense sentence: "used to be" but not "the key used to sign", "is new in"
// but not "apply it if it is new", "no longer supports" but not "resources no longer in Git".
// So "used to" alone is not refused on purpose: it is also the passive of "use". Review labels
// come as "(H3)", "(H3, M6)", "[L2]" and, at a word's start, "M3:" (commit subjects' form).
var forbidden = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\([HML][0-9]{1,2}(?:,\s*[HML][0-9]{1,2})*\)|\[[HML][0-9]{1,2}(?:,\s*[HML][0-9]{1,2})*\]`), "a review label"},
	{regexp.MustCompile(`\b[HML][0-9]{1,2}:`), "a review label"},
	{regexp.MustCompile(`(?i)\breview findings?\b`), "a review label"},
	{regexp.MustCompile(`§`), "a section number of another document; link to the page instead"},
	{regexp.MustCompile(`(?i)\bas before\b`), "history: say what it does"},
	{regexp.MustCompile(`(?i)\bused to (be|have|do|show|say|read|print|return|take|run|need)\b`), "history: say what it does"},
	{regexp.MustCompile(`(?i)\bis new in\b|\bnew in (v|version|release)\b`), "history: say what it does"},
	{regexp.MustCompile(`(?i)\bno longer (supports?|accepts?|needs?|requires?|shows?|prints?|reads?|runs?|works?|exists?)\b`), "history: say what it does"},
	{regexp.MustCompile(`(?i)\b(has|have) been (changed|renamed|replaced|reworked|rewritten)\b`), "history: say what it does"},
	{regexp.MustCompile(`(?i)\bformerly\b`), "history: say what it does"},
	{regexp.MustCompile(`(?i)\banymore\b`), "history: say what it does"},
}

// ForbiddenPhrases returns the forbidden phrases of a Markdown document's prose: fenced code
// blocks and inline code spans are not looked at (a command's output may say anything).
func ForbiddenPhrases(src string) []Phrase {
	var found []Phrase
	for i, l := range proseLines(src) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		for _, f := range forbidden {
			for _, m := range f.re.FindAllString(l, -1) {
				found = append(found, Phrase{Line: i + 1, Match: m, Why: f.why})
			}
		}
	}
	return found
}
