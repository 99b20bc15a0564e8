// Package specdiff owns the line diffs trueup shows of specs: a longest-common-subsequence
// edit script over lines, unified-diff hunks, and the canonical pretty-printing of JSON values
// that makes two specs comparable line by line. `trueup diff` and pull-request previews use it.
package specdiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trueup-dev/trueup/internal/manifest"
)

// edit is one line of a line diff: ' ' kept, '-' only in a, '+' only in b. ai and bi are the
// number of lines of a and b before it.
type edit struct {
	op     byte
	line   string
	ai, bi int
}

// maxDiffCells bounds the LCS table; beyond it the changed middle is shown as replaced.
const maxDiffCells = 4 << 20

// diffLines returns an edit script from a to b with a longest common subsequence of lines.
// Specs are small, so the quadratic table is fine; the common head and tail are cut first,
// which makes the usual one-field change linear.
func diffLines(a, b []string) []edit {
	var out []edit
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		out = append(out, edit{' ', a[pre], pre, pre})
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(am), len(bm)
	if n*m > maxDiffCells {
		for i, l := range am {
			out = append(out, edit{'-', l, pre + i, pre})
		}
		for j, l := range bm {
			out = append(out, edit{'+', l, pre + n, pre + j})
		}
	} else {
		// lcs[i][j] is the LCS length of am[i:] and bm[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && am[i] == bm[j]:
				out = append(out, edit{' ', am[i], pre + i, pre + j})
				i, j = i+1, j+1
			case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
				out = append(out, edit{'+', bm[j], pre + i, pre + j})
				j++
			default:
				out = append(out, edit{'-', am[i], pre + i, pre + j})
				i++
			}
		}
	}
	for k := 0; k < suf; k++ {
		ai, bi := len(a)-suf+k, len(b)-suf+k
		out = append(out, edit{' ', a[ai], ai, bi})
	}
	return out
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
