package terraform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/actions"
)

// planFacts is what trueup reads in a saved plan (terraform show -json): what it would do,
// counted as policies read it, whether applying it changes anything, and its hash.
type planFacts struct {
	add, change, destroy, replace int
	applies                       bool
	hash                          string
}

// showJSON is the part of show -json a plan's hash covers: what it would do (the resource
// and output changes), and what it runs to do it (the variables' values and the
// configuration: a provisioner's command, a data source's program, which no change shows).
// The rest (the prior state, the planned values, the timestamp) is left out: two plans of the
// same change against the same state differ there, or say nothing the changes do not.
type showJSON struct {
	ResourceChanges []map[string]any `json:"resource_changes"`
	OutputChanges   map[string]any   `json:"output_changes"`
	Variables       map[string]any   `json:"variables"`
	Configuration   map[string]any   `json:"configuration"`
}

// planInput is what a plan's hash takes besides its show -json: the module's content hash,
// and the secrets of the call (the spec's revealed values, the instance's own) that the hash
// must not depend on.
type planInput struct {
	module  string
	secrets []string
}

// sensitiveMark stands, in the hashed form, for every value Terraform marks sensitive.
const sensitiveMark = "(sensitive value)"

// readPlan counts and hashes a plan's show -json. The hash covers the plan's mode (a
// destroy plan never shares one with a plan to apply), the module's content hash (files the
// configuration does not quote: a script a provisioner runs), and showJSON: resources sorted
// by address, objects by key, numbers as written.
//
// The hash is published (the approval request, the API, the CLI, history, notifications),
// and show -json holds every value in clear: hashed as it is, a low-entropy secret would be
// recovered by hashing guesses. So no secret goes into it: every value Terraform marks
// sensitive (a resource's or an output's before_sensitive and after_sensitive, a sensitive
// variable) becomes sensitiveMark, and every value the call revealed or the instance holds
// (planInput.secrets) becomes "***" wherever it occurs, in strings and keys, and in numbers
// as the host scrubs them (actions.NewNumbers). Nothing is lost by it: approvers never see
// the secrets (plans, previews and messages are scrubbed of them), so an approval bound to a
// secret's value would bind to something no approver checked; a change of the spec (a
// secret's too) is a new generation, which the approval is bound to as well.
func readPlan(js []byte, destroy bool, in planInput) (planFacts, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc showJSON
	if err := dec.Decode(&doc); err != nil {
		return planFacts{}, fmt.Errorf("read the plan's JSON: %w", err)
	}
	var f planFacts
	for _, rc := range doc.ResourceChanges {
		change, _ := rc["change"].(map[string]any)
		acts := stringsOf(change["actions"])
		switch {
		case slices.Equal(acts, []string{"create"}):
			f.add++
		case slices.Equal(acts, []string{"update"}):
			f.change++
		case slices.Equal(acts, []string{"delete"}):
			f.destroy++
		case slices.Equal(acts, []string{"delete", "create"}), slices.Equal(acts, []string{"create", "delete"}):
			f.replace++
		}
		f.applies = f.applies || !slices.Equal(acts, []string{"no-op"})
	}
	for _, oc := range doc.OutputChanges {
		m, _ := oc.(map[string]any)
		f.applies = f.applies || !slices.Equal(stringsOf(m["actions"]), []string{"no-op"})
	}
	slices.SortFunc(doc.ResourceChanges, func(a, b map[string]any) int { return strings.Compare(changeKey(a), changeKey(b)) })
	if doc.ResourceChanges == nil {
		doc.ResourceChanges = []map[string]any{}
	}
	if doc.OutputChanges == nil {
		doc.OutputChanges = map[string]any{}
	}
	if doc.Variables == nil {
		doc.Variables = map[string]any{}
	}
	if doc.Configuration == nil {
		doc.Configuration = map[string]any{}
	}
	doc.maskSensitive()
	canon, err := json.Marshal(doc) // map keys sorted
	if err != nil {
		return planFacts{}, err
	}
	if canon, err = scrubCanonical(canon, in.secrets); err != nil {
		return planFacts{}, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\nmodule %s\n", planMode(destroy), in.module)
	h.Write(canon)
	f.hash = hex.EncodeToString(h.Sum(nil))
	return f, nil
}

// maskSensitive replaces the values Terraform marks sensitive with sensitiveMark: the
// before and after of resource and output changes where before_sensitive and after_sensitive
// say so, and the values (and defaults) of the variables the configuration declares
// sensitive.
func (doc *showJSON) maskSensitive() {
	for _, rc := range doc.ResourceChanges {
		if change, ok := rc["change"].(map[string]any); ok {
			maskChange(change)
		}
	}
	for _, oc := range doc.OutputChanges {
		if change, ok := oc.(map[string]any); ok {
			maskChange(change)
		}
	}
	maskVariables(doc.Configuration, doc.Variables)
}

// maskChange masks a change's before and after by its before_sensitive and after_sensitive.
func maskChange(change map[string]any) {
	for _, side := range []string{"before", "after"} {
		if v, ok := change[side]; ok {
			change[side] = masked(v, change[side+"_sensitive"])
		}
	}
}

// masked is v with the parts marks (true, or an object or list of marks shaped as v) says
// are sensitive replaced by sensitiveMark.
func masked(v, marks any) any {
	switch m := marks.(type) {
	case bool:
		if m && v != nil {
			return sensitiveMark
		}
	case map[string]any:
		if obj, ok := v.(map[string]any); ok {
			for k, e := range obj {
				obj[k] = masked(e, m[k])
			}
		}
	case []any:
		if list, ok := v.([]any); ok {
			for i, e := range list {
				if i < len(m) {
					list[i] = masked(e, m[i])
				}
			}
		}
	}
	return v
}

// maskVariables masks the values of the sensitive variables of the root module and the
// defaults of every module's sensitive variables, as configuration declares them.
func maskVariables(configuration, values map[string]any) {
	root, _ := configuration["root_module"].(map[string]any)
	maskModule(root, values)
}

func maskModule(mod, values map[string]any) {
	if mod == nil {
		return
	}
	vars, _ := mod["variables"].(map[string]any)
	for name, decl := range vars {
		d, _ := decl.(map[string]any)
		if d == nil || d["sensitive"] != true {
			continue
		}
		if _, ok := d["default"]; ok {
			d["default"] = sensitiveMark
		}
		if v, ok := values[name].(map[string]any); ok {
			if _, ok := v["value"]; ok {
				v["value"] = sensitiveMark
			}
		}
	}
	calls, _ := mod["module_calls"].(map[string]any)
	for _, call := range calls {
		c, _ := call.(map[string]any)
		child, _ := c["module"].(map[string]any)
		maskModule(child, nil)
	}
}

// scrubCanonical replaces every secret in the canonical JSON: strings and keys through
// actions.Scrubber, numbers that show one as the host's scrubbing finds them.
func scrubCanonical(canon []byte, secrets []string) ([]byte, error) {
	if len(secrets) == 0 {
		return canon, nil
	}
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	scrub := actions.Scrubber(secrets)
	return json.Marshal(actions.ScrubValue(v, scrub, actions.NewNumbers(scrub, secrets)))
}

// changeKey names a resource change: its address, and the deposed object's key when the
// change is to one.
func changeKey(rc map[string]any) string {
	addr, _ := rc["address"].(string)
	deposed, _ := rc["deposed"].(string)
	return addr + "\x00" + deposed
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

// planMode names a plan's kind in its hash and in the name of its kept file.
func planMode(destroy bool) string {
	if destroy {
		return "destroy"
	}
	return "apply"
}

// plan is the actions.Plan of a saved plan: its run's output gives the summary and text.
func (f planFacts) plan(out string, changes bool) actions.Plan {
	return actions.Plan{Changes: changes, Summary: summary(out, changes), Text: planText(out),
		Counted: true, Add: f.add, Change: f.change, Destroy: f.destroy, Replace: f.replace, Hash: f.hash}
}

// short is a plan hash as messages show it.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// savedPlan plans into file (-destroy for a delete's plan) and reads it back.
func (c *call) savedPlan(ctx context.Context, file string, destroy bool, extra ...string) (runResult, bool, planFacts, error) {
	args := append([]string{"-out=" + file}, extra...)
	if destroy {
		args = append(args, "-destroy")
	}
	res, changes, err := c.plan(ctx, args...)
	if err != nil {
		return res, false, planFacts{}, err
	}
	f, err := c.show(ctx, file, destroy)
	return res, changes, f, err
}

// show reads a saved plan with show -json. Its JSON holds the spec's values in clear: it is
// only counted and hashed, never kept or shown.
func (c *call) show(ctx context.Context, file string, destroy bool) (planFacts, error) {
	var js bytes.Buffer
	if _, err := c.runTo(ctx, true, nil, &js, "show", "-json", "-no-color", file); err != nil {
		return planFacts{}, err
	}
	return readPlan(js.Bytes(), destroy, planInput{module: c.module, secrets: c.secrets})
}

// plansDir holds the plan the gate kept (KeepPlan) in the working copy, one at most.
func (c *call) plansDir() string { return filepath.Join(c.dir, "plans") }

func (c *call) keptPlan(destroy bool, hash string) string {
	return filepath.Join(c.plansDir(), planMode(destroy)+"-"+hash+".tfplan")
}

// keptStamp is the file beside a kept plan that holds the digest of the request it was made
// for (requestDigest).
func (c *call) keptStamp(destroy bool, hash string) string {
	return filepath.Join(c.plansDir(), planMode(destroy)+"-"+hash+".request")
}

// requestDigest digests what a call plans with: the module's content hash and the spec (its
// var file, canonical: objects by key, numbers as written). A kept plan is applied only by a
// call of the same digest.
func requestDigest(module string, vars []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(vars))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("var file: %w", err)
	}
	canon, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("var file: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "module %s\n", module)
	h.Write(canon)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// keep moves a saved plan to the working copy, named by its hash, with the digest of this
// call's request beside it, in place of the one kept before: the gate plans again before each
// apply, so only the last plan can be approved.
func (c *call) keep(file string, destroy bool, hash string) error {
	if err := os.RemoveAll(c.plansDir()); err != nil {
		return fmt.Errorf("working copy: %w", err)
	}
	if err := os.Mkdir(c.plansDir(), 0o700); err != nil {
		return fmt.Errorf("working copy: %w", err)
	}
	if err := writeFile0600(c.keptStamp(destroy, hash), []byte(c.request)); err != nil {
		return fmt.Errorf("working copy: %w", err)
	}
	return os.Rename(file, c.keptPlan(destroy, hash))
}

// dropPlans removes the kept plan, if any: it holds the spec's revealed values in clear, and
// a call that does not apply it (a Reconcile or Delete without ApprovedPlan after a deny, a
// rejection, a removed policy; an Observe; a plan of another hash) leaves nothing to apply
// it for. The next gate's plan keeps a new one.
func (c *call) dropPlans() error {
	if err := os.RemoveAll(c.plansDir()); err != nil {
		return fmt.Errorf("working copy: %w", err)
	}
	return nil
}

// approved takes the kept plan of hash into the call's folder (it is applied once, or
// planned again), checks that it was made for this call's spec and module (a plan approved
// for one spec is never applied by a call of another) and that it still reads as that hash.
// applies is false for a plan without changes.
func (c *call) approved(ctx context.Context, hash string, destroy bool) (file string, applies bool, err error) {
	file = filepath.Join(c.callDir, "approved.tfplan")
	if err := os.Rename(c.keptPlan(destroy, hash), file); errors.Is(err, os.ErrNotExist) {
		return "", false, fmt.Errorf("the approved plan %s is no longer here: it is planned again", short(hash))
	} else if err != nil {
		return "", false, fmt.Errorf("working copy: %w", err)
	}
	if made, err := os.ReadFile(c.keptStamp(destroy, hash)); err != nil || string(made) != c.request {
		return "", false, fmt.Errorf("the approved plan %s was planned for another spec or module than this call's: it is planned again", short(hash))
	}
	f, err := c.show(ctx, file, destroy)
	if err != nil {
		return "", false, err
	}
	if f.hash != hash {
		return "", false, fmt.Errorf("the approved plan %s is no longer here (the kept plan reads as %s): it is planned again", short(hash), short(f.hash))
	}
	return file, f.applies, nil
}

// staleMark is Terraform's error for a saved plan whose state changed since it was made.
const staleMark = "Saved plan is stale"

// apply applies a saved plan; approved (the plan's hash, when the gate approved it) names it
// in the error when the state changed since it was made.
func (c *call) apply(ctx context.Context, file, approved string) (runResult, error) {
	res, err := c.run(ctx, true, "apply", "-input=false", "-no-color", "-auto-approve", "-lock-timeout="+lockTimeout, file)
	if err != nil && approved != "" && strings.Contains(res.output, staleMark) {
		return res, fmt.Errorf("the approved plan %s is stale (terraform: %s: the state changed since it was made): it is planned again", short(approved), staleMark)
	}
	return res, err
}

// planFor is Plan (destroy false) and PlanDelete. The gate's plan (KeepPlan) runs as a
// reconcile does and keeps its file; a preview's plan gives way to every other call.
func (a *Action) planFor(ctx context.Context, req actions.Request, destroy bool) (actions.Plan, error) {
	req.Checkpoint = nil
	if req.KeepPlan {
		return a.gatePlan(ctx, req, destroy)
	}
	if a.repo.source != "" && !a.prPlans {
		return actions.Plan{}, fmt.Errorf("module %s of source %s: a pull request's module is planned only with pullRequestModules: true: %w",
			a.repo.path, a.repo.source, actions.ErrNoPlan)
	}
	applied, err := a.applied(ctx, workspaceName(req.Resource))
	if err != nil {
		return actions.Plan{}, err
	}
	switch {
	case !applied && destroy:
		return actions.Plan{Counted: true, Summary: "no changes"}, nil
	case !applied:
		return actions.Plan{Changes: true, Summary: newPlanSummary}, nil
	}
	ctx, c, end, err := a.begin(ctx, req, true)
	if err != nil {
		return actions.Plan{}, err
	}
	defer end()
	res, changes, f, err := c.savedPlan(ctx, filepath.Join(c.callDir, "plan.tfplan"), destroy, "-lock=false")
	if err != nil {
		if errors.Is(context.Cause(ctx), actions.ErrPlanBusy) {
			return actions.Plan{}, actions.ErrPlanBusy
		}
		return actions.Plan{}, err
	}
	return f.plan(res.output, changes), nil
}

// gatePlan is the plan the gate asks for before a Reconcile or Delete: it waits for the
// resource's lock and the state lock as a reconcile does (the host called PlanGate.Want), in
// the working copy the apply runs in, creating the workspace of a resource never applied,
// and keeps the plan file for the ApprovedPlan call. The module is the one the call reads
// (the merged revision's, or the applied one's for a delete), not a pull request's.
func (a *Action) gatePlan(ctx context.Context, req actions.Request, destroy bool) (actions.Plan, error) {
	// A resource never applied stays so for previews (applied) when the gate denies it or
	// waits: the working copy says so until a Reconcile (a configured backend's; the pg
	// backend's row stays empty).
	fresh := false
	if a.custom {
		applied, err := a.applied(ctx, workspaceName(req.Resource))
		if err != nil {
			return actions.Plan{}, err
		}
		fresh = !applied
	}
	ctx, c, end, err := a.begin(ctx, req, false)
	if err != nil {
		return actions.Plan{}, err
	}
	defer end()
	if fresh {
		if err := os.WriteFile(filepath.Join(c.dir, unappliedFile), nil, 0o600); err != nil {
			return actions.Plan{}, fmt.Errorf("working copy: %w", err)
		}
	}
	file := filepath.Join(c.callDir, "plan.tfplan")
	res, changes, f, err := c.savedPlan(ctx, file, destroy, "-lock-timeout="+lockTimeout)
	if err != nil {
		return actions.Plan{}, err
	}
	if err := c.keep(file, destroy, f.hash); err != nil {
		return actions.Plan{}, err
	}
	return f.plan(res.output, changes), nil
}

// PlanDelete is plan -destroy, as Plan is plan: a preview's without locks, the gate's
// (KeepPlan) kept for Delete.
func (a *Action) PlanDelete(ctx context.Context, req actions.Request) (actions.Plan, error) {
	return a.planFor(ctx, req, true)
}

var _ actions.DeletePlanner = (*Action)(nil)
