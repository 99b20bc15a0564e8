package preview

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/changeplan"
	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/policy"
	"github.com/trueup-dev/trueup/internal/redact"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/specdiff"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/sources"
)

// Checker judges a pull request's files as a push of them would be judged, and says what
// they would change. It holds its own loader: the syncer's cache serves the syncer's
// revisions, which a preview must not evict.
type Checker struct {
	Source string
	Store  *store.Store
	// Loader parses and validates (a preview's own: manifest.NewLoader()). A preview holds
	// no decryption key: encrypted fields stay markers, which the schema and the rules
	// treat as unknown (sealed.LoadMasked), so that a pull request's rules cannot read a
	// secret.
	Loader *manifest.Loader
	// Render is the source's render hook (syncer.Options.Render; nil: none): a pull request
	// is rendered as a push of it would be.
	Render func(ctx context.Context, files []sources.File) ([]sources.File, error)
	// CheckAction, Limits, Prune, MaxPruneFraction and AllowEmpty are the source's sync settings.
	CheckAction func(name string, with json.RawMessage) error
	// CheckReference is the source's reference grants (manifest.Options.CheckReference).
	CheckReference   func(from string, target graph.ID, outputs []string) error
	Limits           manifest.Limits
	Prune            bool
	MaxPruneFraction float64
	AllowEmpty       bool
	// Actions are the action instances by name; those implementing actions.Planner are
	// asked for plans.
	Actions map[string]actions.Action
	// Plans is the gate the reconciler calls through, shared by the instances: a plan of an
	// actions.PlanArbitrated plugin's resource being reconciled is refused, and stopped when
	// a reconcile comes (nil: each instance's own gate).
	Plans *actions.PlanGate
	// PlanTimeout bounds each plan (0: 60s); PlanConcurrency bounds plans at once (0: 4).
	PlanTimeout     time.Duration
	PlanConcurrency int
	// Redact holds the controller's secrets, scrubbed from what plugins return (nil: none).
	Redact *redact.Registry
	// Roots are the controller's folders (its config's and data folders, the actions' working
	// and lock folders): paths in them, and in the temp dir, are cut from what plans publish.
	Roots []string
	// NoResolve and ResolveForks say whose plans see output references resolved
	// (preview.resolveOutputs): by default a pull request from a branch of the repository
	// does and one from a fork does not; NoResolve: none does; ResolveForks: forks too.
	NoResolve, ResolveForks bool
	// ForkPlans lets pull requests from forks be planned by actions whose plans run code or
	// CI the pull request chooses (actions.PullRequestCodePlanner: github-actions, gitlab,
	// terraform with a repository module and pullRequestModules; preview.forkPlans).
	ForkPlans bool
	// Policies returns the controller's policies as they are now (the running config's; nil,
	// or a nil func: none): each change is decided as the reconciler would after merge
	// (Change.Gate).
	Policies func() *policy.Set
}

// Origin says where a pull request comes from.
type Origin struct {
	// Fork: the head is in another repository than the base (or the forge did not say).
	Fork bool
}

// Warnings and plan summaries about pull requests from forks.
const (
	forkNotResolved = "output references are left as written in the plans of a pull request from a fork (preview.resolveOutputs)"
	// reconcilingSkipped: a plan gives way to a reconcile of its resource on any replica.
	reconcilingSkipped = "being reconciled; the next push plans it"
	planningSkipped    = "another plan is in progress; the next push plans it"
	forkCISkipped      = "pull request from a fork: a plan would run the fork's code or the repository's CI with the controller's or the repository's secrets; not planned (preview.forkPlans)"
)

// Bounds on what one preview keeps.
const (
	maxPlanText = 32 << 10
	diffContext = 3
)

// Check is CheckFrom for a pull request from a branch of the source's repository.
func (c *Checker) Check(ctx context.Context, snap *sources.Snapshot) (Result, string, error) {
	return c.CheckFrom(ctx, snap, Origin{})
}

// CheckFrom returns what snap, a pull request's files, would do to the source, and the
// source's applied revision it was compared with; from says where the pull request comes
// from (what its plans may see and run). An error means the preview could not be made (the
// database could not be read); an invalid pull request is a Result with Errors.
func (c *Checker) CheckFrom(ctx context.Context, snap *sources.Snapshot, from Origin) (Result, string, error) {
	known, err := syncer.OtherTypes(ctx, c.Store, c.Source)
	if err != nil {
		return Result{}, "", fmt.Errorf("load types of other sources: %w", err)
	}
	appliedTypes, err := c.appliedTypes(ctx)
	if err != nil {
		return Result{}, "", err
	}
	var inputFiles []sources.File // the snapshot as fetched, when a render replaces it
	if c.Render != nil {
		files, err := c.Render(ctx, snap.Files)
		if problems, ok := render.Problems(err); ok {
			base, berr := c.Store.CheckRevision(ctx, store.ApplyParams{Source: c.Source})
			if berr != nil {
				return Result{}, "", berr
			}
			return invalid(problems, c.Redact.Scrub), base.Revision, nil
		}
		if err != nil {
			return Result{}, "", fmt.Errorf("render %s: %w", clip.Rev(snap.Revision), err)
		}
		inputFiles = snap.Files
		snap = &sources.Snapshot{Revision: snap.Revision, Author: snap.Author, Files: files}
	}
	var readErr error
	applied := func(keys []manifest.ResourceKey) (map[manifest.ResourceKey]sealed.Applied, error) {
		rs := make([]manifest.Resource, len(keys))
		for i, k := range keys {
			rs[i] = manifest.Resource{Namespace: k.Namespace, Kind: k.Kind, Name: k.Name}
		}
		got, err := c.Store.AppliedSpecs(ctx, c.Source, rs)
		if err != nil {
			readErr = fmt.Errorf("read applied specs of encrypted files: %w", err)
			return nil, readErr
		}
		out := make(map[manifest.ResourceKey]sealed.Applied, len(got))
		for k, a := range got {
			out[k] = sealed.Applied{Spec: a.Spec, Sealed: a.Sealed}
		}
		return out, nil
	}
	set, err := sealed.LoadMasked(c.Loader, snap.Files, manifest.Options{KnownTypes: known, CheckAction: c.CheckAction, CheckReference: c.CheckReference, Limits: c.Limits, InputFiles: inputFiles},
		applied,
		func(set *manifest.Set) error {
			cands := set.TransitionCandidates()
			if len(cands) == 0 {
				return nil
			}
			// The applied specs as stored: their encrypted fields are markers, unknown to the
			// rules like the pull request's (never revealed for a pull request's rules).
			old, err := c.Store.AppliedSpecs(ctx, c.Source, cands)
			if err != nil {
				readErr = fmt.Errorf("read applied specs for transition rules: %w", err)
				return readErr
			}
			specs := make(map[manifest.ResourceKey]json.RawMessage, len(old))
			for k, a := range old {
				specs[k] = a.Spec
			}
			return c.Loader.CheckTransitions(set, specs)
		})
	var verrs manifest.Errors
	switch {
	case readErr != nil:
		return Result{}, "", readErr
	case errors.As(err, &verrs):
		// What a push of these files would be rejected for; nothing else is worth showing.
		base, berr := c.Store.CheckRevision(ctx, store.ApplyParams{Source: c.Source})
		if berr != nil {
			return Result{}, "", berr
		}
		return invalid(verrs, c.Redact.Scrub), base.Revision, nil
	case err != nil:
		return Result{}, "", fmt.Errorf("load %s: %w", clip.Rev(snap.Revision), err)
	}
	check, err := c.Store.CheckRevision(ctx, store.ApplyParams{Source: c.Source, Revision: snap.Revision, Set: set})
	if err != nil {
		return Result{}, "", err
	}
	if len(check.Conflicts) > 0 {
		return invalid(check.Conflicts, c.Redact.Scrub), check.Revision, nil
	}
	res := c.diff(set, check, snap.Revision, len(snap.Files) == 0)
	plans, unresolved := c.plan(ctx, set, appliedTypes, check.Applied, res.Changes, snap.Revision, from)
	if unresolved {
		res.Warnings = append(res.Warnings, forkNotResolved)
		res.WarningNamespaces = append(res.WarningNamespaces, "")
	}
	c.gate(ctx, set, appliedTypes, check.Applied, res.Changes, plans, snap, from)
	return res, check.Revision, nil
}

// appliedTypes are the types as merged commits declared them (every source's, by lowercase
// name): what plans are asked with.
func (c *Checker) appliedTypes(ctx context.Context) (map[string]manifest.ResourceType, error) {
	all, err := c.Store.ListTypes(ctx)
	if err != nil {
		return nil, fmt.Errorf("load applied types: %w", err)
	}
	out := make(map[string]manifest.ResourceType, len(all))
	for _, t := range all {
		mt, err := manifest.TypeFromSpec(t.Name, t.Group, t.Path, t.Spec)
		if err != nil {
			return nil, fmt.Errorf("read applied type %s: %w", t.Name, err)
		}
		out[strings.ToLower(t.Name)] = mt
	}
	return out, nil
}

func invalid(errs manifest.Errors, scrub func(string) string) Result {
	r := Result{Changes: []Change{}, Errors: make([]Error, len(errs))}
	for i, e := range manifest.SortErrors(append(manifest.Errors(nil), errs...)) {
		r.Errors[i] = Error{File: e.File, Line: e.Line, Path: e.Path, Message: scrub(e.Msg), Origin: e.Origin}
	}
	r.Counts.Invalid = len(errs)
	return r
}

func identity(namespace, kind, name string) string {
	return namespace + "/" + strings.ToLower(kind) + "/" + name
}

// diff compares set with the applied resources by the change plan of store.ApplyRevision
// (changeplan.Plan): a new identity is added, a spec hash that moved (or a resource being
// deleted that comes back) is a change with a new generation, new labels, annotations or
// apiVersion are a change without one, and what set lacks is deleted when the source prunes
// and the prune guards allow it.
func (c *Checker) diff(set *manifest.Set, check store.RevisionCheck, revision string, noManifests bool) Result {
	res := Result{Changes: []Change{}, Errors: []Error{}}
	from, to := "applied", "pull request"
	if check.Revision != "" {
		from = "applied@" + clip.Rev(check.Revision)
	}
	if revision != "" {
		to = "pull request@" + clip.Rev(revision)
	}
	desired := make([]changeplan.Resource, len(set.Resources))
	for i := range set.Resources {
		r := &set.Resources[i]
		desired[i] = changeplan.Resource{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Spec: r.SpecHash, Meta: r.MetaHash}
	}
	applied := make([]changeplan.Applied, len(check.Applied))
	for i := range check.Applied {
		a := &check.Applied[i]
		applied[i] = changeplan.Applied{Resource: changeplan.Resource{Namespace: a.Namespace, Kind: a.Kind, Name: a.Name, Spec: a.SpecHash, Meta: a.MetaHash},
			Deleting: a.Deleting, Keep: a.Keep, Orphaned: a.Orphaned}
	}
	plan := changeplan.Plan(changeplan.Revision{Subject: "revision " + clip.Rev(revision), NoManifests: noManifests, Resources: desired}, applied,
		changeplan.Prune{Enabled: c.Prune, MaxFraction: c.MaxPruneFraction, AllowEmpty: c.AllowEmpty})
	for i, st := range plan.Steps {
		r := &set.Resources[i]
		ch := Change{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, File: r.File, Line: r.Line}
		switch st.Op {
		case changeplan.Create:
			ch.Op = "add"
			ch.Diff = diffText(nil, r.Spec, from, to)
		case changeplan.Update:
			ch.Op = "change"
			ch.Diff = diffText(check.Applied[st.Applied].Spec, r.Spec, from, to)
		case changeplan.Relabel:
			ch.Op = "change"
			ch.Diff = metaDiff(&check.Applied[st.Applied], r, from, to)
			ch.Plan = &Plan{Status: "skipped", Summary: metadataOnly}
		default:
			res.Counts.Unchanged++
			continue
		}
		res.Changes = append(res.Changes, ch)
	}
	for _, j := range plan.Orphan {
		a := &check.Applied[j]
		why := "the source does not prune"
		if a.Keep {
			why = "trueup.dev/prune: disabled"
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s %s/%s (%s:%d) is no longer declared; kept: %s", a.Kind, a.Namespace, a.Name, a.File, a.Line, why))
		res.WarningNamespaces = append(res.WarningNamespaces, a.Namespace)
	}
	if reason := plan.Guard.Reason; reason != "" {
		res.Warnings = append(res.Warnings, reason+": "+plan.Guard.Message)
		res.WarningNamespaces = append(res.WarningNamespaces, "")
	}
	for _, j := range plan.Deleted() {
		a := &check.Applied[j]
		res.Changes = append(res.Changes, Change{Op: "delete", Kind: a.Kind, Namespace: a.Namespace, Name: a.Name, File: a.File, Line: a.Line,
			Diff: diffText(a.Spec, nil, from, to)})
	}
	for _, ch := range res.Changes {
		switch ch.Op {
		case "add":
			res.Counts.Add++
		case "change":
			res.Counts.Change++
		case "delete":
			res.Counts.Delete++
		}
	}
	slices.SortFunc(res.Changes, func(x, y Change) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Name, y.Name))
	})
	return res
}

// diffText is the unified diff of two specs, secrets as ***: encrypted fields are compared
// by their markers (which change when the value does), secret references are masked.
func diffText(a, b json.RawMessage, from, to string) string {
	if a == nil {
		a = json.RawMessage("null")
	}
	if b == nil {
		b = json.RawMessage("null")
	}
	lines := specdiff.JSON(Mask(a), Mask(b), "spec "+from, "spec "+to, diffContext)
	return strings.Join(lines, "\n")
}

func metaDiff(a *store.AppliedResource, r *manifest.Resource, from, to string) string {
	meta := func(apiVersion string, labels, annotations map[string]string) json.RawMessage {
		if labels == nil {
			labels = map[string]string{}
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		b, _ := json.Marshal(map[string]any{"apiVersion": apiVersion, "labels": labels, "annotations": annotations})
		return b
	}
	lines := specdiff.JSON(meta(a.APIVersion, a.Labels, a.Annotations), meta(r.APIVersion, r.Labels, r.Annotations),
		"metadata "+from, "metadata "+to, diffContext)
	return strings.Join(lines, "\n")
}

// metadataOnly is the plan summary of a change of labels, annotations or apiVersion alone.
const metadataOnly = "metadata only: no new generation, no reconcile"

// plan asks the action of every added resource and of every resource whose spec changed
// for a plan, PlanConcurrency at a time, each within PlanTimeout; plans holds, aligned with
// changes, what policies read of each plan made (policy.NoPlan for the others). The action and its with:
// are the applied type's, never the pull request's: with: chooses what a plan runs (a
// workflow, a pipeline job, a ref), and a pull request from a fork must not choose it. A
// resource whose type the pull request adds, or whose action or with: it changes, is not
// planned.
//
// Output references are resolved only to the outputs of the source's own applied resources
// (own) in the referring resource's namespace: a pull request, public on the forge, must not
// read another source's or another namespace's outputs into a plan it shows, even where a
// grant lets the resource itself read them. Others stay as written. Whatever was resolved is
// scrubbed from what the plan returns (sanitize). A pull request from a fork gets no
// reference resolved unless ResolveForks (unresolved reports that one was left so), and no
// plan that runs the pull request's code or the forge's CI unless ForkPlans.
func (c *Checker) plan(ctx context.Context, set *manifest.Set, applied map[string]manifest.ResourceType, own []store.AppliedResource,
	changes []Change, revision string, from Origin) (plans []policy.Plan, unresolved bool) {
	plans = make([]policy.Plan, len(changes))
	declared := map[string]manifest.ResourceType{}
	for _, t := range set.Types {
		declared[strings.ToLower(t.Name)] = t
	}
	byID := make(map[string]*manifest.Resource, len(set.Resources))
	for i := range set.Resources {
		r := &set.Resources[i]
		byID[identity(r.Namespace, r.Kind, r.Name)] = r
	}
	mine := make(map[graph.ID]bool, len(own))
	for _, a := range own {
		if !a.Deleting {
			mine[graph.ID{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name}.Key()] = true
		}
	}
	resolve := !c.NoResolve && (!from.Fork || c.ResolveForks)
	var outputs map[graph.ID]map[string]any
	if ids := referenced(changes, byID, mine); len(ids) > 0 && resolve {
		var err error
		if outputs, err = c.Store.CurrentOutputs(ctx, ids); err != nil {
			// Plans then see the references as written, as they would a missing output.
			outputs = nil
		}
	} else if len(ids) > 0 && from.Fork {
		unresolved = true
	}
	timeout := cmp.Or(c.PlanTimeout, 60*time.Second)
	sem := make(chan struct{}, cmp.Or(c.PlanConcurrency, 4))
	var wg sync.WaitGroup
	for i := range changes {
		ch := &changes[i]
		if ch.Op == "delete" || ch.Plan != nil {
			continue
		}
		r := byID[identity(ch.Namespace, ch.Kind, ch.Name)]
		t, ok := applied[strings.ToLower(ch.Kind)]
		if r == nil {
			ch.Plan = &Plan{Status: "skipped", Error: "no type"}
			continue
		}
		if !ok {
			ch.Plan = &Plan{Status: "skipped", Summary: "the pull request adds the type: not planned before merge"}
			continue
		}
		if pr, ok := declared[strings.ToLower(ch.Kind)]; ok && !sameAction(pr.Action, t.Action) {
			ch.Plan = &Plan{Status: "skipped", Summary: "the pull request changes the type's action: not planned before merge"}
			continue
		}
		planner, ok := c.Actions[t.Action.Name].(actions.Planner)
		if !ok {
			ch.Plan = &Plan{Status: "no-plan"}
			continue
		}
		if p, ok := planner.(actions.PullRequestCodePlanner); ok && p.RunsPullRequestCode() && from.Fork && !c.ForkPlans {
			ch.Plan = &Plan{Status: "skipped", Summary: forkCISkipped}
			continue
		}
		spec, values := resolveRefs(r.Spec, r.Namespace, outputs)
		req := actions.Request{With: t.Action.With, Resource: actions.Resource{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace,
			Name: r.Name, Spec: spec, Labels: r.Labels, Annotations: r.Annotations, Source: c.Source, Revision: revision}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				ch.Plan = &Plan{Status: "skipped", Error: "preview cancelled"}
				return
			}
			defer func() { <-sem }()
			// A reconcile of the resource may hold it on another replica, where the plugin's
			// lock (a file of this host) cannot see it: ask the database, as late as can be.
			switch busy, err := c.Store.BeingReconciled(ctx, r.Namespace, r.Kind, r.Name); {
			case err != nil:
				ch.Plan = &Plan{Status: "skipped", Error: "could not read whether a reconcile holds the resource; the next push plans it"}
				return
			case busy:
				ch.Plan = &Plan{Status: "skipped", Summary: reconcilingSkipped}
				return
			}
			ch.Plan, plans[i] = c.planOne(ctx, planner, req, timeout, values)
		}()
	}
	wg.Wait()
	return plans, unresolved
}

// sameAction reports whether two types name the same action with the same with:.
func sameAction(a, b manifest.ActionRef) bool {
	if a.Name != b.Name {
		return false
	}
	if len(a.With) == 0 || len(b.With) == 0 {
		return len(a.With) == len(b.With)
	}
	x, errX := manifest.Canonical(a.With)
	y, errY := manifest.Canonical(b.With)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}

// referenced lists the resources of mine whose outputs the changes to plan reference.
func referenced(changes []Change, byID map[string]*manifest.Resource, mine map[graph.ID]bool) []graph.ID {
	seen := map[graph.ID]bool{}
	var ids []graph.ID
	for _, ch := range changes {
		r := byID[identity(ch.Namespace, ch.Kind, ch.Name)]
		if r == nil || ch.Op == "delete" || ch.Plan != nil {
			continue
		}
		for _, d := range r.DependsOn {
			if k := d.Target.Key(); len(d.Outputs) > 0 && !seen[k] && mine[k] && d.Target.Namespace == r.Namespace {
				seen[k] = true
				ids = append(ids, k)
			}
		}
	}
	return ids
}

// planOne asks p for one plan; values are the output values resolved into req's spec, which
// the plan's text, summary and error are scrubbed of (sanitize), with the controller's
// secrets. made is what policies read of the plan (policy.NoPlan when there is none).
func (c *Checker) planOne(ctx context.Context, p actions.Planner, req actions.Request, timeout time.Duration, values []string) (out *Plan, made policy.Plan) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if v := recover(); v != nil {
			out, made = &Plan{Status: "error", Error: "the action panicked during plan (a bug in the plugin; see the controller's log)"}, policy.NoPlan
		}
	}()
	plan, err := actions.GateFor(c.Plans, p).Plan(ctx, p, req)
	switch {
	case errors.Is(err, actions.ErrNoPlan):
		return &Plan{Status: "no-plan"}, policy.NoPlan
	case errors.Is(err, actions.ErrPlanBusy):
		return &Plan{Status: "skipped", Summary: reconcilingSkipped}, policy.NoPlan
	case errors.Is(err, actions.ErrPlanInProgress):
		return &Plan{Status: "skipped", Summary: planningSkipped}, policy.NoPlan
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &Plan{Status: "timeout", Error: fmt.Sprintf("no plan within %s", timeout)}, policy.NoPlan
	case err != nil:
		return &Plan{Status: "error", Error: sanitize(err.Error(), values, c.Redact, c.Roots)}, policy.NoPlan
	}
	return &Plan{Status: "planned", Changes: plan.Changes, Summary: oneLine(sanitize(plan.Summary, values, c.Redact, c.Roots)),
		Text: truncate(sanitize(plan.Text, values, c.Redact, c.Roots), maxPlanText)}, policy.PlanOf(plan.Changes, plan.Counted, plan.Add, plan.Change, plan.Destroy, plan.Replace, plan.Summary)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate keeps s within n bytes, cut at a line end when one is near, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut-- // not inside a UTF-8 sequence
	}
	if nl := strings.LastIndexByte(s[:cut], '\n'); nl > n/2 {
		cut = nl
	}
	return s[:cut] + "\n… (cut)"
}
