// Package specdiff owns the line diffs trueup shows of specs: an edit script over lines
// (go-diff), unified-diff hunks, and the canonical pretty-printing of JSON values
// that makes two specs comparable line by line. `trueup diff` and pull-request previews use it.
package specdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// edit is one line of a line diff: ' ' kept, '-' only in a, '+' only in b. ai and bi are the
// number of lines of a and b before it.
type edit struct {
	op     byte
	line   string
	ai, bi int
}

// diffLines returns an edit script from a to b: go-diff's line mode (Myers' algorithm over
// lines, each line encoded as one character), without a deadline so that the same inputs
// always give the same script.
func diffLines(a, b []string) []edit {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0
	ta, tb, lines := dmp.DiffLinesToChars(joinLines(a), joinLines(b))
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ta, tb, false), lines)
	var out []edit
	ai, bi := 0, 0
	for _, d := range diffs {
		for _, l := range SplitLines(d.Text) {
			switch d.Type {
			case diffmatchpatch.DiffEqual:
				out = append(out, edit{' ', l, ai, bi})
				ai, bi = ai+1, bi+1
			case diffmatchpatch.DiffDelete:
				out = append(out, edit{'-', l, ai, bi})
				ai++
			case diffmatchpatch.DiffInsert:
				out = append(out, edit{'+', l, ai, bi})
				bi++
			}
		}
	}
	return out
}

// joinLines is the text of lines, each ended by a newline.
func joinLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// Unified formats the changes from a to b as unified-diff hunks (without the ---/+++
// header) with context lines around each change; nil when a and b are equal.
func Unified(a, b []string, context int) []string {
	edits := diffLines(a, b)
	var out []string
	for i := 0; i < len(edits); {
		if edits[i].op == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		last := i
		for j := i; j < len(edits); j++ {
			if edits[j].op != ' ' {
				last = j
			} else if j-last > 2*context {
				break
			}
		}
		stop := min(last+context+1, len(edits))
		hunk := edits[start:stop]
		var na, nb int
		for _, e := range hunk {
			if e.op != '+' {
				na++
			}
			if e.op != '-' {
				nb++
			}
		}
		out = append(out, fmt.Sprintf("@@ -%s +%s @@", hunkRange(hunk[0].ai, na), hunkRange(hunk[0].bi, nb)))
		for _, e := range hunk {
			out = append(out, string(e.op)+e.line)
		}
		i = stop
	}
	return out
}

// hunkRange spells a hunk's line range as GNU diff does: "start,count", the count left out
// when it is 1, and the line before the hunk when it is empty.
func hunkRange(before, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprint(before + 1)
	}
	return fmt.Sprintf("%d,%d", before+1, count)
}

// SplitLines splits text into lines without the trailing empty one.
func SplitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// JSON diffs two JSON values pretty-printed in canonical form (keys sorted), with context
// lines around each change and a ---/+++ header; nil when they are equal.
func JSON(a, b json.RawMessage, fromLabel, toLabel string, context int) []string {
	hunks := Unified(PrettyCanonical(a), PrettyCanonical(b), context)
	if hunks == nil {
		return nil
	}
	return append([]string{"--- " + fromLabel, "+++ " + toLabel}, hunks...)
}

// PrettyCanonical is v as indented canonical JSON, one line per element.
func PrettyCanonical(v json.RawMessage) []string {
	if len(bytes.TrimSpace(v)) == 0 {
		v = json.RawMessage("null")
	}
	if c, err := manifest.Canonical(v); err == nil {
		v = c
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, v, "", "  "); err != nil {
		return SplitLines(string(v))
	}
	return SplitLines(buf.String())
}
