package preview

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/previewresult"
)

// Comment is what a pull request's comment shows.
type Comment struct {
	Source  string
	HeadSHA string
	Result  Result
	// Failure, when set, says why no preview could be made (the head could not be fetched, …);
	// Result is then empty.
	Failure string
	// DashboardURL is the preview's page (<externalURL>/sources/<source>/previews/<n>); "" for
	// none.
	DashboardURL string
	// Limit is the forge's comment limit in characters (0: no limit).
	Limit int
}

// Marker starts every preview comment: it names the comment's purpose to readers of the raw
// text, and lets an operator find trueup's comments.
const Marker = "<!-- trueup preview -->"

// CountsLine is "1 to add, 1 to change, 0 to delete, 5 unchanged, 0 invalid".
func CountsLine(c Counts) string {
	return fmt.Sprintf("%d to add, %d to change, %d to delete, %d unchanged, %d invalid", c.Add, c.Change, c.Delete, c.Unchanged, c.Invalid)
}

// part is a piece of the comment that can be cut between its rows: head, rows, tail.
type part struct {
	head  string
	rows  []string
	tail  string
	whole bool // all or nothing (a resource's details)
}

func (p part) text() string { return p.head + strings.Join(p.rows, "") + p.tail }

// RenderComment renders the pull request's comment as GitHub-flavoured Markdown (which
// GitLab and Gitea render alike). Everything the pull request's author controls (names,
// messages, diffs, plan text) is in code blocks or escaped. The comment is cut, between rows,
// to the forge's limit; the cut comment links to the dashboard's page of the preview.
func RenderComment(c Comment) string {
	var parts []part
	title := fmt.Sprintf("%s\n### trueup preview of source %s at %s\n\n", Marker, inlineCode(c.Source), inlineCode(clip.Rev(c.HeadSHA)))
	if c.Failure != "" {
		parts = append(parts, part{head: title + "**Could not preview this pull request:**\n\n" + fenced("text", c.Failure) + "\n"})
		return assemble(parts, c)
	}
	r := c.Result
	verdict := "✅ valid"
	if len(r.Errors) > 0 {
		verdict = "❌ invalid: a push of this revision would be rejected and the source would keep its applied revision"
	}
	parts = append(parts, part{head: title + CountsLine(r.Counts) + "\n\n" + verdict + "\n\n" + gatesLine(r.Changes)})
	if len(r.Errors) > 0 {
		fence := fenceFor(joinErrors(r.Errors))
		p := part{head: fmt.Sprintf("#### Errors (%d)\n\n%stext\n", len(r.Errors), fence), tail: fence + "\n\n"}
		for _, e := range r.Errors {
			p.rows = append(p.rows, errorLine(e)+"\n")
		}
		parts = append(parts, p)
	}
	if len(r.Warnings) > 0 {
		p := part{head: "#### Warnings\n\n", tail: "\n"}
		for _, w := range r.Warnings {
			p.rows = append(p.rows, "- "+escape(w)+"\n")
		}
		parts = append(parts, p)
	}
	if len(r.Changes) > 0 {
		p := part{head: "| | Resource | File | Plan |\n|---|---|---|---|\n", tail: "\n"}
		for _, ch := range r.Changes {
			p.rows = append(p.rows, fmt.Sprintf("| %s | %s | %s | %s |\n", opSign(ch.Op), escape(ch.Kind+"/"+ch.Namespace+"/"+ch.Name),
				escape(where(ch.File, ch.Line)), escape(planCell(ch))))
		}
		parts = append(parts, p)
		for _, ch := range r.Changes {
			parts = append(parts, part{head: details(ch), whole: true})
		}
	}
	return assemble(parts, c)
}

// assemble joins parts within the limit, leaving room for the footer.
func assemble(parts []part, c Comment) string {
	footer := ""
	if c.DashboardURL != "" {
		footer = "[Full preview on trueup's dashboard](" + c.DashboardURL + ")\n"
	}
	cutNote := "\n**This comment was cut at the forge's size limit.** "
	if c.DashboardURL != "" {
		cutNote += "[See the full preview on trueup's dashboard](" + c.DashboardURL + ").\n"
	} else {
		cutNote += "See the full preview with `trueup preview " + c.Source + " --pr N` or the API.\n"
	}
	var b strings.Builder
	total := 0
	for _, p := range parts {
		total += len(p.text())
	}
	if c.Limit <= 0 || total+len(footer) <= c.Limit {
		for _, p := range parts {
			b.WriteString(p.text())
		}
		b.WriteString(footer)
		return b.String()
	}
	budget := c.Limit - len(cutNote)
	for _, p := range parts {
		t := p.text()
		if b.Len()+len(t) <= budget {
			b.WriteString(t)
			continue
		}
		if !p.whole && b.Len()+len(p.head)+len(p.tail) < budget {
			b.WriteString(p.head)
			for i, row := range p.rows {
				more := fmt.Sprintf("… and %d more\n", len(p.rows)-i)
				if b.Len()+len(row)+len(more)+len(p.tail) > budget {
					b.WriteString(more)
					break
				}
				b.WriteString(row)
			}
			b.WriteString(p.tail)
		}
		break
	}
	b.WriteString(cutNote)
	return b.String()
}

func details(ch Change) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s %s\n\n", opSign(ch.Op), escape(ch.Kind+"/"+ch.Namespace+"/"+ch.Name))
	if ch.Diff != "" {
		b.WriteString(fenced("diff", ch.Diff))
		b.WriteString("\n")
	}
	if g := ch.Gate; g != nil {
		fmt.Fprintf(&b, "%s After merge: %s\n\n", gateSign(g), escape(g.Text()))
	}
	if p := ch.Plan; p != nil {
		fmt.Fprintf(&b, "Plan: %s\n\n", escape(planSummary(p)))
		if p.Text != "" {
			b.WriteString("<details><summary>Plan output</summary>\n\n")
			b.WriteString(fenced("text", p.Text))
			b.WriteString("\n</details>\n\n")
		}
	}
	return b.String()
}

// gatesLine says how many changes the policies would hold after merge ("" for none).
func gatesLine(changes []Change) string {
	wait, denied, undecided := 0, 0, 0
	for _, ch := range changes {
		switch {
		case ch.Gate == nil:
		case ch.Gate.Decision == "deny":
			denied++
		case ch.Gate.Decision == previewresult.Undecided:
			undecided++
		default:
			wait++
		}
	}
	var says []string
	if wait > 0 {
		says = append(says, fmt.Sprintf("%d would wait for approval", wait))
	}
	if denied > 0 {
		says = append(says, fmt.Sprintf("%d would be denied", denied))
	}
	if undecided > 0 {
		says = append(says, fmt.Sprintf("%d would be decided on the plan made after merge", undecided))
	}
	if len(says) == 0 {
		return ""
	}
	return "Policies: after merge, of the changes below, " + strings.Join(says, " and ") + ".\n\n"
}

func gateSign(g *Gate) string {
	switch g.Decision {
	case "deny":
		return "⛔"
	case previewresult.Undecided:
		return "❔"
	}
	return "⏸"
}

// planCell is a change's plan and, when a policy would hold it, the policy's verdict.
func planCell(ch Change) string {
	s := planSummary(ch.Plan)
	if ch.Gate == nil {
		return s
	}
	g := gateSign(ch.Gate) + " " + ch.Gate.Text()
	if s == "" {
		return g
	}
	return s + "; " + g
}

func planSummary(p *Plan) string {
	if p == nil {
		return ""
	}
	switch p.Status {
	case "planned":
		if p.Summary != "" {
			return p.Summary
		}
		if p.Changes {
			return "changes"
		}
		return "no changes"
	case "no-plan":
		return "no plan (the action cannot plan)"
	case "skipped":
		return strings.TrimSpace("skipped " + p.Summary + " " + p.Error)
	}
	return strings.TrimSpace(p.Status + ": " + p.Error)
}

func opSign(op string) string {
	switch op {
	case "add":
		return "+ add"
	case "delete":
		return "- delete"
	}
	return "~ change"
}

func where(file string, line int) string {
	if line > 0 {
		return file + ":" + strconv.Itoa(line)
	}
	return file
}

func errorLine(e Error) string {
	var b strings.Builder
	if loc := where(e.File, e.Line); loc != "" {
		b.WriteString(loc + ": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(oneLine(e.Message))
	return b.String()
}

func joinErrors(errs []Error) string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = errorLine(e)
	}
	return strings.Join(lines, "\n")
}

// fenceFor returns a backtick fence longer than any run of backticks in s.
func fenceFor(s string) string {
	return strings.Repeat("`", max(3, longestBackticks(s)+1))
}

// longestBackticks is the longest run of backticks in s.
func longestBackticks(s string) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

func fenced(lang, s string) string {
	f := fenceFor(s)
	return f + lang + "\n" + strings.TrimSuffix(s, "\n") + "\n" + f + "\n"
}

// inlineCode is s as a code span, whatever backticks it holds.
func inlineCode(s string) string {
	// A span is closed only by a run of backticks as long as its opening one: one longer
	// than any run inside.
	f := strings.Repeat("`", longestBackticks(s)+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return f + " " + s + " " + f
	}
	return f + s + f
}

// escape makes s plain text on one line in Markdown, table cells included: Markdown's
// punctuation is backslash-escaped, HTML's brackets become entities, and an @ is followed by
// a zero-width space, so that a name or message from the pull request mentions nobody (a
// mention notifies whoever it names, and a backslash does not stop it).
func escape(s string) string {
	var b strings.Builder
	for _, r := range oneLine(s) {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '@':
			b.WriteString("@\u200b")
		case '\\', '`', '*', '_', '[', ']', '|', '#', '~', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
