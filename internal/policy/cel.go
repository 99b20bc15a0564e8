package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// Resource is what a rule reads as `resource`: the resource's identity, labels and
// annotations.
type Resource struct {
	Source      string            `cel:"source"` // the source it comes from
	APIVersion  string            `cel:"apiVersion"`
	Kind        string            `cel:"kind"`
	Namespace   string            `cel:"namespace"`
	Name        string            `cel:"name"`
	Labels      map[string]string `cel:"labels"`
	Annotations map[string]string `cel:"annotations"`
}

// Change is what a rule reads as `change`: why the resource is reconciled.
type Change struct {
	Type       string   `cel:"type"`       // ChangeCreate, ChangeUpdate, ChangeDelete or ChangeDrift
	Generation int64    `cel:"generation"` // the generation to apply
	Revision   string   `cel:"revision"`   // the source revision (commit) it comes from
	Author     Author   `cel:"author"`     // the commit's author; empty when unknown
	Paths      []string `cel:"paths"`      // the spec's changed field paths ("spec.size", "spec.tags.env")
}

// The values of Change.Type.
const (
	ChangeCreate = "create"
	ChangeUpdate = "update"
	ChangeDelete = "delete"
	ChangeDrift  = "drift" // the world moved away from the applied spec
)

// Author is a commit's author.
type Author struct {
	Name  string `cel:"name"`
	Email string `cel:"email"`
}

// Plan is what a rule reads as `plan`: the action's plan of the change. Available is false
// when the action cannot plan; the counts are then 0.
type Plan struct {
	Available bool   `cel:"available"`
	Changes   bool   `cel:"changes"` // the plan would change something
	Counted   bool   `cel:"counted"` // add, change, destroy and replace are counts (0: none, not unknown)
	Add       int64  `cel:"add"`     // things the plan creates
	Change    int64  `cel:"change"`  // things it updates in place
	Destroy   int64  `cel:"destroy"` // things it deletes
	Replace   int64  `cel:"replace"` // things it deletes and creates again
	Summary   string `cel:"summary"` // one line, e.g. "1 to add, 0 to change, 0 to destroy"
}

// celEnv is the environment every rule compiles in. It is immutable once built.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		ext.NativeTypes(reflect.TypeFor[Resource](), reflect.TypeFor[Change](), reflect.TypeFor[Author](),
			reflect.TypeFor[Plan](), ext.ParseStructTags(true)),
		cel.Variable("resource", cel.ObjectType("policy.Resource")),
		cel.Variable("spec", cel.DynType),
		cel.Variable("oldSpec", cel.DynType),
		cel.Variable("change", cel.ObjectType("policy.Change")),
		cel.Variable("plan", cel.ObjectType("policy.Plan")),
		cel.Variable("now", cel.TimestampType),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(),
		ext.Sets(),
	)
})

// interruptEvery is how many comprehension iterations run between two checks of the
// evaluation's context.
const interruptEvery = 100

// compileRule compiles a policy's when and says which of the costly inputs it reads.
func compileRule(env *cel.Env, rule string, costLimit uint64) (prg cel.Program, reads Reads, err error) {
	if len(rule) > maxRuleLength {
		return nil, Reads{}, fmt.Errorf("rule is longer than %d bytes", maxRuleLength)
	}
	ast, iss := env.Compile(rule)
	if iss != nil && iss.Err() != nil {
		return nil, Reads{}, fmt.Errorf("rule does not compile: %s", issues(iss))
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, Reads{}, fmt.Errorf("rule must give a bool, not %s", t)
	}
	prg, err = env.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(interruptEvery))
	if err != nil {
		return nil, Reads{}, fmt.Errorf("rule does not compile: %w", err)
	}
	return prg, readsOf(ast.NativeRep()), nil
}

// readsOf says which costly inputs a checked rule reads: plan and oldSpec when it names them;
// change.author and change.paths when it selects them, or names change otherwise (passes it
// whole).
func readsOf(a *celast.AST) Reads {
	var r Reads
	refs := a.ReferenceMap()
	isChange := func(e celast.Expr) bool {
		ref, ok := refs[e.ID()]
		return ok && e.Kind() == celast.IdentKind && ref.Name == "change"
	}
	changes, selected := 0, 0
	for _, ref := range refs {
		switch ref.Name {
		case "plan":
			r.Plan = true
		case "oldSpec":
			r.OldSpec = true
		case "change":
			changes++
		}
	}
	celast.PreOrderVisit(a.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() != celast.SelectKind || !isChange(e.AsSelect().Operand()) {
			return
		}
		selected++
		switch e.AsSelect().FieldName() {
		case "author":
			r.Author = true
		case "paths":
			r.Paths = true
		}
	}))
	if changes > selected {
		r.Author, r.Paths = true, true
	}
	return r
}

// issues spells compile errors on one line, each with its line and column in the rule.
func issues(iss *cel.Issues) string {
	var parts []string
	for _, e := range iss.Errors() {
		parts = append(parts, fmt.Sprintf("%s (line %d, column %d)", e.Message, e.Location.Line(), e.Location.Column()+1))
	}
	return strings.Join(parts, "; ")
}

// activation gives a rule its variables without building a map per evaluation; the specs
// are decoded on first use.
type activation struct {
	in                *Input
	spec, oldSpec     any
	decoded, oldReady bool
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "resource":
		return a.in.Resource, true
	case "spec":
		if !a.decoded {
			a.spec, a.decoded = decodeSpec("spec", a.in.Spec), true
		}
		return a.spec, true
	case "oldSpec":
		if !a.oldReady {
			a.oldSpec, a.oldReady = decodeSpec("oldSpec", a.in.OldSpec), true
		}
		return a.oldSpec, true
	case "change":
		return a.in.Change, true
	case "plan":
		return a.in.Plan, true
	case "now":
		return a.in.Now, true
	}
	return nil, false
}

// decodeSpec decodes a spec for rules: nil for none, an error value (which fails the rule
// that reads it) for one that is not JSON.
func decodeSpec(name string, raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return types.NewErr("%s is not JSON: %v", name, err)
	}
	return v
}

func (*activation) Parent() interpreter.Activation { return nil }

// eval runs a compiled rule: whether it holds, or why it could not be evaluated.
func (c *compiled) eval(ctx context.Context, a *activation) (bool, error) {
	out, _, err := c.prg.ContextEval(ctx, a)
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
			return false, fmt.Errorf("rule is too expensive to evaluate (over the cost limit of %d)", c.costLimit)
		}
		if cerr := ctx.Err(); cerr != nil {
			// The caller's context ended: not the rule's fault (errors.Is finds the cause).
			return false, fmt.Errorf("rule could not be evaluated: %w (%w)", err, cerr)
		}
		return false, fmt.Errorf("rule could not be evaluated: %w", err)
	}
	switch out {
	case types.True:
		return true, nil
	case types.False:
		return false, nil
	}
	return false, fmt.Errorf("rule gave %s, not a bool", out.Type().TypeName())
}
