package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/previewresult"
	"github.com/trueup-dev/trueup/internal/specdiff"
	"github.com/trueup-dev/trueup/internal/wire"
)

// PreviewOptions are the flags of `trueup preview`.
type PreviewOptions struct {
	PR     int
	Output string
	Limit  int
}

func previewsPath(source string) string {
	return "/api/v1/sources/" + url.PathEscape(source) + "/previews"
}

// ListPreviews prints a source's previews, most recently updated first.
func ListPreviews(ctx context.Context, c *apiclient.Client, clock func() time.Time, source string, o PreviewOptions, out, errOut io.Writer) error {
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := c.Get(ctx, previewsPath(source), url.Values{"limit": {strconv.Itoa(o.Limit)}}, &page); err != nil {
		return err
	}
	now := clock()
	if o.Output == OutJSON || o.Output == OutYAML {
		return printList(out, o.Output, page.Items)
	}
	if len(page.Items) == 0 {
		_, err := fmt.Fprintf(errOut, "No previews found for source %s.\n", source)
		return err
	}
	items, err := apiclient.DecodeItems[wire.Preview](page.Items)
	if err != nil {
		return err
	}
	t := newTable(out, "PR", "STATE", "HEAD", "ADD", "CHANGE", "DELETE", "INVALID", "UPDATED", "TITLE")
	for _, p := range items {
		add, change, del, invalid := "-", "-", "-", "-"
		if c := p.Counts; c != nil {
			add, change, del, invalid = strconv.Itoa(c.Add), strconv.Itoa(c.Change), strconv.Itoa(c.Delete), strconv.Itoa(c.Invalid)
		}
		t.row("#"+strconv.Itoa(p.Number), p.State, ShortRev(p.HeadSHA), add, change, del, invalid, ago(now, p.UpdatedAt), truncate(p.Title, messageWidth))
	}
	return t.flush()
}

// ShowPreview prints the preview of pull request o.PR.
func ShowPreview(ctx context.Context, c *apiclient.Client, clock func() time.Time, source string, o PreviewOptions, out io.Writer) error {
	var raw json.RawMessage
	if err := c.Get(ctx, previewsPath(source)+"/"+strconv.Itoa(o.PR), nil, &raw); err != nil {
		return err
	}
	now := clock()
	if o.Output == OutJSON || o.Output == OutYAML {
		return printDoc(out, o.Output, raw)
	}
	var p wire.Preview
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("preview %s#%d: %w", source, o.PR, err)
	}
	var b bytes.Buffer
	writePreview(now, &b, p)
	_, err := b.WriteTo(out)
	return err
}

// writePreview prints one preview for a human.
func writePreview(now time.Time, b *bytes.Buffer, p wire.Preview) {
	fields := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
	field := func(label, value string) { fmt.Fprintf(fields, "%s:\t%s\n", label, value) }
	field("Source", p.Source)
	title := "#" + strconv.Itoa(p.Number)
	if p.Title != "" {
		title += " " + OneLine(p.Title)
	}
	field("Pull Request", title)
	field("URL", orNone(p.URL))
	field("State", p.State)
	field("Message", orNone(OneLine(p.Message)))
	field("Head", orNone(p.HeadSHA))
	field("Compared With", ShortRev(p.BaseRevision)+" (applied)")
	field("Comment", orNone(p.CommentURL))
	field("Updated", timestamp(now, p.UpdatedAt))
	if p.Result != nil {
		field("Counts", countsLine(p.Result.Counts))
	}
	_ = fields.Flush()

	if p.Result == nil {
		if p.State == "Pending" || p.State == "Running" {
			b.WriteString("\nThe preview is being prepared.\n")
		} else {
			b.WriteString("\nThis preview has no result.\n")
		}
		return
	}
	res := p.Result

	fmt.Fprintf(b, "\nChanges (%d):\n", len(res.Changes))
	if len(res.Changes) == 0 {
		b.WriteString("  <none>\n")
	}
	for _, c := range res.Changes {
		name := c.Name
		if c.Namespace != "" {
			name = c.Namespace + "/" + c.Name
		}
		line := fmt.Sprintf("  %s %-6s  %s/%s", opSign(c.Op), c.Op, c.Kind, name)
		if c.File != "" {
			line += "  " + fileLine(c.File, c.Line)
		}
		b.WriteString(line + "\n")
		if c.Diff != "" {
			indent(b, c.Diff, "      ")
		}
		if pl := c.Plan; pl != nil {
			fmt.Fprintf(b, "    Plan: %s\n", planLine(pl))
			if pl.Text != "" {
				indent(b, pl.Text, "      ")
			}
		}
		if g := c.Gate; g != nil {
			fmt.Fprintf(b, "    After merge: %s\n", g.Text())
		}
	}
	if p.HiddenChanges > 0 {
		fmt.Fprintf(b, "  (%s in namespaces you may not see)\n", plural.Count(p.HiddenChanges, "more change", "more changes"))
	}

	if len(res.Warnings) > 0 {
		fmt.Fprintf(b, "\nWarnings (%d):\n", len(res.Warnings))
		for _, w := range res.Warnings {
			fmt.Fprintf(b, "  %s\n", OneLine(w))
		}
	}
	if len(res.Errors) > 0 {
		fmt.Fprintf(b, "\nErrors (%d):\n", len(res.Errors))
		for _, e := range res.Errors {
			var where []string
			if e.File != "" {
				where = append(where, fileLine(e.File, e.Line))
			}
			if e.Path != "" {
				where = append(where, e.Path)
			}
			where = append(where, e.Message)
			fmt.Fprintf(b, "  %s\n", strings.Join(where, ": "))
		}
	}
}

func countsLine(c previewresult.Counts) string {
	return fmt.Sprintf("%d to add, %d to change, %d to delete, %d unchanged, %d invalid", c.Add, c.Change, c.Delete, c.Unchanged, c.Invalid)
}

func opSign(op string) string {
	switch op {
	case "add":
		return "+"
	case "delete":
		return "-"
	}
	return "~"
}

func planLine(p *previewresult.Plan) string {
	switch p.Status {
	case "no-plan":
		return "no plan (the action does not plan)"
	case "skipped":
		return "skipped"
	case "error", "timeout":
		what := "failed"
		if p.Status == "timeout" {
			what = "timed out"
		}
		if p.Error != "" {
			what += ": " + OneLine(p.Error)
		}
		return what
	}
	s := p.Summary
	if s == "" {
		s = "no summary"
	}
	if !p.Changes {
		s += " (no changes)"
	}
	return OneLine(s)
}

func fileLine(file string, line int) string {
	if line > 0 {
		return file + ":" + strconv.Itoa(line)
	}
	return file
}

// indent writes each line of text with prefix.
func indent(b *bytes.Buffer, text, prefix string) {
	for _, l := range specdiff.SplitLines(strings.TrimRight(text, "\n")) {
		b.WriteString(strings.TrimRight(prefix+l, " ") + "\n")
	}
}
