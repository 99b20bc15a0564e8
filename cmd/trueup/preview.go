package main

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

	"github.com/spf13/cobra"
	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/plural"
	"github.com/trueup-dev/trueup/internal/preview"
)

// previewOptions are the flags of `trueup preview`.
type previewOptions struct {
	pr     int
	output string
	limit  int
}

func newPreviewCmd(api *apiOptions) *cobra.Command {
	var o previewOptions
	cmd := &cobra.Command{
		Use:   "preview SOURCE [--pr N]",
		Short: "Show what a pull request would change: counts, spec diffs, plans, warnings and errors",
		Long: `Shows the pull-request previews of a source (one per pull or merge request, the latest
push of each), as the controller computed them when the forge's webhook arrived.

Without --pr, lists the source's previews, most recently updated first:

  PR STATE HEAD ADD CHANGE DELETE INVALID UPDATED TITLE

With --pr N, shows that pull request's preview: its state, the head commit and the applied
revision it was compared with, the counts, every change with its spec diff and its action's
plan, the warnings (prune guards that would skip deletions, plans that timed out) and every
validation error as file:line. -o json and -o yaml print the API's answer.`,
		Example: `  trueup preview infra
  trueup preview infra --pr 42
  trueup preview infra --pr 42 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(o.output, outTable, outJSON, outYAML); err != nil {
				return err
			}
			if cmd.Flags().Changed("pr") && o.pr < 1 {
				return fmt.Errorf("--pr %d: want a pull request number (1 or more)", o.pr)
			}
			if o.limit < 1 || o.limit > 1000 {
				return fmt.Errorf("--limit %d: want 1 to 1000", o.limit)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			if o.pr == 0 {
				return listPreviews(cmd.Context(), c, args[0], o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return showPreview(cmd.Context(), c, args[0], o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.pr, "pr", 0, "the pull (merge) request number; without it, list the source's previews")
	f.StringVarP(&o.output, "output", "o", outTable, "output format: table (text with --pr), json or yaml")
	f.IntVar(&o.limit, "limit", 100, "previews listed at most (1 to 1000)")
	return cmd
}

// previewDoc is a preview as the API answers it.
type previewDoc struct {
	Source        string          `json:"source"`
	Number        int             `json:"number"`
	Provider      string          `json:"provider"`
	Title         string          `json:"title"`
	URL           string          `json:"url"`
	HeadSHA       string          `json:"headSha"`
	BaseRevision  string          `json:"baseRevision"`
	State         string          `json:"state"`
	Message       string          `json:"message"`
	CommentURL    string          `json:"commentUrl"`
	UpdatedAt     time.Time       `json:"updatedAt"`
	Counts        *preview.Counts `json:"counts"`
	Result        *preview.Result `json:"result"`
	HiddenChanges int             `json:"hiddenChanges"`
}

func previewsPath(source string) string {
	return "/api/v1/sources/" + url.PathEscape(source) + "/previews"
}

func listPreviews(ctx context.Context, c *apiclient.Client, source string, o previewOptions, out, errOut io.Writer) error {
	var page struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := c.Get(ctx, previewsPath(source), url.Values{"limit": {strconv.Itoa(o.limit)}}, &page); err != nil {
		return err
	}
	if o.output == outJSON || o.output == outYAML {
		return printList(out, o.output, page.Items)
	}
	if len(page.Items) == 0 {
		_, err := fmt.Fprintf(errOut, "No previews found for source %s.\n", source)
		return err
	}
	items, err := apiclient.DecodeItems[previewDoc](page.Items)
	if err != nil {
		return err
	}
	t := newTable(out, "PR", "STATE", "HEAD", "ADD", "CHANGE", "DELETE", "INVALID", "UPDATED", "TITLE")
	for _, p := range items {
		add, change, del, invalid := "-", "-", "-", "-"
		if c := p.Counts; c != nil {
			add, change, del, invalid = strconv.Itoa(c.Add), strconv.Itoa(c.Change), strconv.Itoa(c.Delete), strconv.Itoa(c.Invalid)
		}
		t.row("#"+strconv.Itoa(p.Number), p.State, shortRev(p.HeadSHA), add, change, del, invalid, ago(p.UpdatedAt), truncate(p.Title, messageWidth))
	}
	return t.flush()
}

func showPreview(ctx context.Context, c *apiclient.Client, source string, o previewOptions, out io.Writer) error {
	var raw json.RawMessage
	if err := c.Get(ctx, previewsPath(source)+"/"+strconv.Itoa(o.pr), nil, &raw); err != nil {
		return err
	}
	if o.output == outJSON || o.output == outYAML {
		return printDoc(out, o.output, raw)
	}
	var p previewDoc
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("preview %s#%d: %w", source, o.pr, err)
	}
	var b bytes.Buffer
	writePreview(&b, p)
	_, err := b.WriteTo(out)
	return err
}

// writePreview prints one preview for a human.
func writePreview(b *bytes.Buffer, p previewDoc) {
	fields := tabwriter.NewWriter(b, 0, 8, 2, ' ', 0)
	field := func(label, value string) { fmt.Fprintf(fields, "%s:\t%s\n", label, value) }
	field("Source", p.Source)
	title := "#" + strconv.Itoa(p.Number)
	if p.Title != "" {
		title += " " + oneLine(p.Title)
	}
	field("Pull Request", title)
	field("URL", orNone(p.URL))
	field("State", p.State)
	field("Message", orNone(oneLine(p.Message)))
	field("Head", orNone(p.HeadSHA))
	field("Compared With", shortRev(p.BaseRevision)+" (applied)")
	field("Comment", orNone(p.CommentURL))
	field("Updated", timestamp(p.UpdatedAt))
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
	}
	if p.HiddenChanges > 0 {
		fmt.Fprintf(b, "  (%s in namespaces you may not see)\n", plural.Count(p.HiddenChanges, "more change", "more changes"))
	}

	if len(res.Warnings) > 0 {
		fmt.Fprintf(b, "\nWarnings (%d):\n", len(res.Warnings))
		for _, w := range res.Warnings {
			fmt.Fprintf(b, "  %s\n", oneLine(w))
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

func countsLine(c preview.Counts) string {
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

func planLine(p *preview.Plan) string {
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
			what += ": " + oneLine(p.Error)
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
	return oneLine(s)
}

func fileLine(file string, line int) string {
	if line > 0 {
		return file + ":" + strconv.Itoa(line)
	}
	return file
}

// indent writes each line of text with prefix.
func indent(b *bytes.Buffer, text, prefix string) {
	for _, l := range splitLines(strings.TrimRight(text, "\n")) {
		b.WriteString(strings.TrimRight(prefix+l, " ") + "\n")
	}
}
