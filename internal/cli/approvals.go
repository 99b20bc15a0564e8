package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/wire"
)

// Approvals lists the changes that wait for approval in namespace ("": every namespace the
// caller sees), oldest first (the API's default state, pending).
func Approvals(ctx context.Context, c *apiclient.Client, clock func() time.Time, namespace, output string, out, errOut io.Writer) error {
	q := url.Values{}
	if namespace != "" {
		q.Set("namespace", namespace)
	}
	raw, err := c.List(ctx, "/api/v1/approvals", q)
	if err != nil {
		return err
	}
	if output != OutTable {
		return printList(out, output, raw)
	}
	if len(raw) == 0 {
		_, err := fmt.Fprintln(errOut, "No change waits for approval.")
		return err
	}
	items, err := apiclient.DecodeItems[wire.Approval](raw)
	if err != nil {
		return err
	}
	now := clock()
	t := newTable(out, "RESOURCE", "STATE", "POLICY", "REQUIRES", "PLAN", "VOTES", "AGE")
	for _, a := range items {
		t.row(a.Namespace+"/"+a.Kind+"/"+a.Name, a.State, a.Policy, truncate(strings.Join(a.Requires, "; "), 70),
			truncate(approvalPlanLine(a), 50), fmt.Sprint(len(a.Approvals)), age(now, a.RequestedAt))
	}
	return t.flush()
}

// approvalPlanLine is a plan in one line: "a1b2c3d4e5f6: 1 to replace".
func approvalPlanLine(a wire.Approval) string {
	s := ShortRev(a.PlanHash)
	switch {
	case !a.Plan.Available:
		return s + ": the action cannot plan"
	case a.Plan.Summary != "":
		return s + ": " + OneLine(a.Plan.Summary)
	}
	return s
}

// Vote approves (or rejects) the change resource namespace/kind/name waits for: it reads the
// request first and sends its plan hash, so that a plan that changed meanwhile is refused
// rather than approved unseen, and prints what it voted on and what the request asks for.
func Vote(ctx context.Context, c *apiclient.Client, namespace, kind, name string, approve bool, reason string, out io.Writer) error {
	r, err := c.GetResource(ctx, namespace, kind, name)
	if err != nil {
		return err
	}
	if r.Approval == nil || r.Approval.State != "pending" {
		what := "nothing"
		if r.Approval != nil {
			what = "the change is " + r.Approval.State + ", nothing"
		}
		return fmt.Errorf("%s/%s in namespace %s: %s waits for approval", r.Kind, r.Metadata.Name, namespace, what)
	}
	verb, did := "approve", "approved"
	if !approve {
		verb, did = "reject", "rejected"
	}
	var a wire.Approval
	if err := c.Post(ctx, apiclient.ResourcePath(namespace, r.Kind, r.Metadata.Name)+"/"+verb, nil,
		wire.Vote{Reason: reason, PlanHash: r.Approval.PlanHash, Generation: r.Approval.Generation}, &a); err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s/%s in namespace %s: policy %s, plan %s, generation %d\n", did, a.Kind, a.Name, a.Namespace, a.Policy,
		approvalPlanLine(a), a.Generation)
	writeVotes(&b, "", a)
	if approve {
		b.WriteString("The change is applied once the approvals its policies ask for are given.\n")
	} else {
		b.WriteString("The change is not applied: the resource stalls until its spec or its plan changes.\n")
	}
	_, err = b.WriteTo(out)
	return err
}

// writeVotes writes what a request asks for and the votes given, each line after indent.
func writeVotes(b *bytes.Buffer, indent string, a wire.Approval) {
	for _, r := range a.Requires {
		fmt.Fprintf(b, "%sRequires: %s\n", indent, r)
	}
	if len(a.Approvals) == 0 {
		fmt.Fprintf(b, "%sVotes: <none>\n", indent)
	}
	for _, v := range a.Approvals {
		fmt.Fprintf(b, "%sVote: %s by %s at %s%s\n", indent, v.Verdict, v.Actor, v.At.UTC().Format(time.RFC3339), reasonNote(v.Reason))
	}
}

func reasonNote(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + OneLine(reason)
}

// describeApproval writes the Approval section of describe: the decision, who may approve,
// the votes and the plan's text.
func describeApproval(b *bytes.Buffer, now time.Time, a *wire.Approval) {
	b.WriteString("Approval:\n")
	fmt.Fprintf(b, "  State: %s (%s by policy %s, %s)\n", a.State, a.Decision, a.Policy, ago(now, a.RequestedAt))
	if a.Message != "" {
		fmt.Fprintf(b, "  Message: %s\n", OneLine(a.Message))
	}
	fmt.Fprintf(b, "  Change: %s of generation %d from revision %s\n", a.ChangeType, a.Generation, ShortRev(a.Revision))
	if a.Author.Name != "" || a.Author.Email != "" {
		fmt.Fprintf(b, "  Author: %s\n", strings.TrimSpace(a.Author.Name+" <"+a.Author.Email+">"))
	}
	fmt.Fprintf(b, "  Plan: %s\n", approvalPlanLine(*a))
	writeVotes(b, "  ", *a)
	if a.Plan.Text != "" {
		b.WriteString("  Plan text:\n")
		for _, l := range strings.Split(strings.TrimRight(a.Plan.Text, "\n"), "\n") {
			fmt.Fprintf(b, "    %s\n", l)
		}
	}
}
