// Package cli does the work of trueup's client commands: it reads the API's answers as wire
// types and a local manifests folder as a sync would, and prints tables, descriptions, trees,
// previews and diffs for a human, or the API's own JSON and YAML. The cobra commands in
// cmd/trueup parse the flags and call it.
package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/specdiff"
)

// Output formats of the API commands.
const (
	OutTable = "table"
	OutWide  = "wide"
	OutJSON  = "json"
	OutYAML  = "yaml"
)

// CheckOutput rejects a format the command does not print.
func CheckOutput(format string, allowed ...string) error {
	if slices.Contains(allowed, format) {
		return nil
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, orList(allowed))
}

func orList(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// printList writes items as {"items": [...]} in JSON or as the same list in YAML. The items
// are the API's own JSON, so fields this CLI does not know still come through.
func printList(w io.Writer, format string, items []json.RawMessage) error {
	if items == nil {
		items = []json.RawMessage{}
	}
	doc, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		return err
	}
	return printDoc(w, format, doc)
}

// printDoc writes one JSON document indented, or converted to YAML.
func printDoc(w io.Writer, format string, doc []byte) error {
	if format == OutYAML {
		y, err := jsonToYAML(doc)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, doc, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := buf.WriteTo(w)
	return err
}

// table prints aligned columns the way kubectl does: three spaces between columns, no
// padding after the last one (nor after empty cells that end a row).
type table struct {
	out io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{out: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 8, 3, ' ', 0)
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = OneLine(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	var out bytes.Buffer
	for _, l := range specdiff.SplitLines(t.buf.String()) {
		out.WriteString(strings.TrimRight(l, " "))
		out.WriteByte('\n')
	}
	t.buf.Reset()
	_, err := out.WriteTo(t.out)
	return err
}

// OneLine keeps a cell on one line: a multi-line message shows its first line and "…".
func OneLine(s string) string {
	first, rest, multi := strings.Cut(s, "\n")
	first = strings.ReplaceAll(strings.TrimRight(first, "\r"), "\t", " ")
	if multi && strings.TrimSpace(rest) != "" {
		first = strings.TrimRight(first, " :") + " …"
	}
	return first
}

// truncate shortens s to at most n characters, ending with "…" when it cut.
func truncate(s string, n int) string {
	s = OneLine(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// ShortRev abbreviates a revision as clip.Rev does ("<none>" for none).
func ShortRev(rev string) string {
	if rev == "" {
		return "<none>"
	}
	return clip.Rev(rev)
}

// age is how long before now t was, as kubectl prints it ("<none>" for an absent time). The
// commands take now from their caller, once per command: one clock for a whole table.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	return humanDuration(now.Sub(t))
}

// ago is age with the word that says it lies in the past ("25m ago"), for columns named
// for a moment (STARTED, LAST SEEN, LAST-SYNC, UPDATED); an AGE column's title says it already.
// A time ahead of this machine's clock (the server's clock runs ahead) reads "in the future".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	if now.Sub(t) < -time.Second {
		return "in the future"
	}
	return age(now, t) + " ago"
}

func agoPtr(now time.Time, t *time.Time) string {
	if t == nil {
		return "<none>"
	}
	return ago(now, *t)
}

// humanDuration rounds d to the two most telling units, as kubectl's ages do: precise while
// recent, coarser as it grows (90s, 3m20s, 45m, 5h12m, 30h, 4d5h, 120d, 3y10d).
func humanDuration(d time.Duration) string {
	if d < -time.Second {
		return "<invalid>"
	}
	s := max(int64(d/time.Second), 0)
	m, h := s/60, s/3600
	switch {
	case s < 120:
		return fmt.Sprintf("%ds", s)
	case m < 10:
		if s%60 == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%ds", m, s%60)
	case m < 3*60:
		return fmt.Sprintf("%dm", m)
	case h < 8:
		if m%60 == 0 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m%60)
	case h < 48:
		return fmt.Sprintf("%dh", h)
	case h < 24*8:
		if h%24 == 0 {
			return fmt.Sprintf("%dd", h/24)
		}
		return fmt.Sprintf("%dd%dh", h/24, h%24)
	case h < 24*365*2:
		return fmt.Sprintf("%dd", h/24)
	case h < 24*365*8:
		y := h / (24 * 365)
		if d := (h / 24) % 365; d != 0 {
			return fmt.Sprintf("%dy%dd", y, d)
		}
		return fmt.Sprintf("%dy", y)
	}
	return fmt.Sprintf("%dy", h/(24*365))
}

// millis prints a reconcile's duration: milliseconds under a second, then seconds with one
// decimal, then minutes and seconds.
func millis(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%dms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	}
	return (time.Duration(ms/1000) * time.Second).String()
}

// timestamp prints t in RFC 3339 with its age, for describe.
func timestamp(now, t time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	return t.UTC().Format(time.RFC3339) + " (" + ago(now, t) + ")"
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
