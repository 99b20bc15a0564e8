package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"

	"github.com/trueup-dev/trueup/internal/jsonptr"
)

// Policy at ingest: a schema level may carry x-trueup-validations, CEL rules in the shape of
// Kubernetes' x-kubernetes-validations. `self` is the value at that level; a rule that names
// `oldSelf` is a transition rule, which compares with the applied spec at the same place.
//
// Rules are compiled once per schema content (compiledSchema is cached by hash) and their
// programs are shared by every resource of the schema; cel-go programs are safe for
// concurrent use. Plain rules run in check(), right after JSON-schema validation succeeds,
// so their outcome is cached with the rest of the check. Transition rules need the applied
// spec, which only the caller knows: Load records which resources need them and
// Loader.CheckTransitions, a pure function of the Set and the applied specs, runs them
// (see transition.go).
const (
	validationsKey = "x-trueup-validations"
	// celCostLimit bounds one evaluation of one rule, in cel-go's cost units (about one per
	// operation; a comprehension costs per element). Each rule's worst case is estimated at
	// compile time, with every string, list and map as large as a document may be (see
	// specSizes): a rule that stays within the limit even then (no comprehension, no regex
	// on a field) runs untracked, because tracking costs several times the evaluation;
	// the others are tracked and stopped at the limit.
	celCostLimit = 1_000_000
	// celBudget bounds all rules of one resource together (checked between rules, so one
	// resource costs at most celBudget+celCostLimit): rules on list items run once per
	// item, and a hundred rules each just under the limit must not cost a hundred times it.
	celBudget = 1_000_000
	// celRevisionBudget bounds the rules of all resources of a revision together, counted
	// like celBudget (untracked rules at their estimated least cost). A resource's cost is
	// remembered with its check, so a load that checks only the changed resources counts
	// the others at what they cost when they were checked, and a revision is judged the
	// same whether it is loaded afresh or on top of a previous one. Resources are checked
	// in parallel and the total is read before each resource's rules, so a load spends at
	// most celRevisionBudget plus (celBudget+celCostLimit) per CPU. Once it is spent, the
	// remaining resources' rules are not evaluated (and not remembered as checked) and
	// Load reports one error for the revision. CheckTransitions has a budget of the same
	// size for the transition rules of the revision.
	celRevisionBudget = 100_000_000
	maxRulesPerType   = 100  // per schema (one version of a type), all levels together
	maxRuleLength     = 4096 // bytes of a rule's source
	maxRuleMessage    = 1024 // bytes of a rule's message
)

// celEnv is the environment every rule compiles in: self and oldSelf of any type, plus the
// extension libraries Kubernetes rules commonly use. It is immutable once built.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("self", cel.DynType),
		cel.Variable("oldSelf", cel.DynType),
		cel.CustomTypeAdapter(specAdapter{}),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(),
		ext.Sets(),
	)
})

// celRule is one compiled entry of x-trueup-validations.
type celRule struct {
	rule       string
	msg        string // the message shown on violation
	field      path   // fieldPath, relative to the level; nil when absent
	prg        cel.Program
	transition bool // names oldSelf
	// untrackedCost is what an evaluation of a rule that runs untracked counts against the
	// resource's budget: its estimated least cost, at least 1 (its worst case, bounded by
	// the limit, assumes values of the largest size and would exhaust the budget after a
	// few evaluations of an ordinary rule). 0 for a rule whose program tracks its cost.
	untrackedCost uint64
	// partial is prg built for partial evaluation, used on levels that hold secret
	// references (see celRun.walk); built on first use, as most schemas never need it.
	partial func() (cel.Program, error)
}

// celNode is the part of a schema that carries rules: the rules of one level and the levels
// below it that carry some. A nil node carries none.
type celNode struct {
	rules      []celRule
	props      []celProp // sorted by name, so that problems come in a stable order
	items      *celNode
	additional *celNode
	// Whether the level or any below it has plain or transition rules: a pass skips the
	// subtrees it has nothing to do in.
	plain, transition bool
}

type celProp struct {
	name string
	node *celNode
}

// ruleError is a malformed or uncompilable rule: where in the schema (a JSON pointer) and why.
type ruleError struct {
	ptr, msg string
}

// buildRules compiles the rules of a decoded schema, or reports the first broken one.
func buildRules(schema any) (*celNode, *ruleError) {
	count := 0
	return buildNode(schema, "", 0, &count)
}

func buildNode(s any, ptr string, depth int, count *int) (*celNode, *ruleError) {
	m, ok := s.(map[string]any)
	if !ok || depth > maxDepth {
		return nil, nil
	}
	n := &celNode{}
	if raw, ok := m[validationsKey]; ok {
		list, ok := raw.([]any)
		if !ok {
			return nil, &ruleError{ptr + "/" + validationsKey, validationsKey + " must be a list of {rule, message, fieldPath}"}
		}
		for i, e := range list {
			*count++
			at := ptr + "/" + validationsKey + "/" + strconv.Itoa(i)
			if *count > maxRulesPerType {
				return nil, &ruleError{at, fmt.Sprintf("more than %d rules in one schema", maxRulesPerType)}
			}
			r, rerr := compileRule(e, at)
			if rerr != nil {
				return nil, rerr
			}
			n.rules = append(n.rules, r)
			n.plain = n.plain || !r.transition
			n.transition = n.transition || r.transition
		}
	}
	add := func(sub *celNode) *celNode {
		if sub != nil {
			n.plain = n.plain || sub.plain
			n.transition = n.transition || sub.transition
		}
		return sub
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(props)) {
			sub, err := buildNode(props[name], ptr+"/properties/"+jsonptr.Escape(name), depth+1, count)
			if err != nil {
				return nil, err
			}
			if add(sub) != nil {
				n.props = append(n.props, celProp{name, sub})
			}
		}
	}
	for _, k := range unreadKeywords {
		if at := findValidations(m[k], ptr+"/"+k, depth+1); at != "" {
			return nil, &ruleError{at, validationsKey + " is read only at the top of a schema and under properties, items and additionalProperties, not under " + k}
		}
	}
	if list, ok := m["items"].([]any); ok {
		if at := findValidations(list, ptr+"/items", depth+1); at != "" {
			return nil, &ruleError{at, validationsKey + " is not read under a list of items schemas"}
		}
	}
	var err *ruleError
	if n.items, err = buildNode(m["items"], ptr+"/items", depth+1, count); err != nil {
		return nil, err
	}
	add(n.items)
	if n.additional, err = buildNode(m["additionalProperties"], ptr+"/additionalProperties", depth+1, count); err != nil {
		return nil, err
	}
	add(n.additional)
	if !n.plain && !n.transition {
		return nil, nil
	}
	return n, nil
}

// unreadKeywords hold subschemas whose x-trueup-validations would not be evaluated (a
// rule under anyOf has no single value to hold for): one there is an error rather than
// a rule silently ignored.
var unreadKeywords = []string{"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$defs", "definitions",
	"patternProperties", "dependentSchemas", "prefixItems", "contains", "propertyNames",
	"unevaluatedItems", "unevaluatedProperties", "additionalItems"}

// findValidations returns the JSON pointer of the first x-trueup-validations key in v, or "".
func findValidations(v any, ptr string, depth int) string {
	if depth > maxDepth {
		return ""
	}
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[validationsKey]; ok {
			return ptr + "/" + validationsKey
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if at := findValidations(x[k], ptr+"/"+jsonptr.Escape(k), depth+1); at != "" {
				return at
			}
		}
	case []any:
		for i, e := range x {
			if at := findValidations(e, ptr+"/"+strconv.Itoa(i), depth+1); at != "" {
				return at
			}
		}
	}
	return ""
}

// compileRule checks one {rule, message, fieldPath} entry and compiles its rule; at is the
// entry's JSON pointer in the schema.
func compileRule(e any, at string) (celRule, *ruleError) {
	m, ok := e.(map[string]any)
	if !ok {
		return celRule{}, &ruleError{at, "a validation must be an object {rule, message, fieldPath}"}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "rule" && k != "message" && k != "fieldPath" {
			return celRule{}, &ruleError{at + "/" + jsonptr.Escape(k), fmt.Sprintf("unknown field %q (allowed: rule, message, fieldPath)", k)}
		}
	}
	var r celRule
	rule, ok := m["rule"].(string)
	switch {
	case !ok && m["rule"] == nil:
		return celRule{}, &ruleError{at, "rule is required"}
	case !ok:
		return celRule{}, &ruleError{at + "/rule", "rule must be a string"}
	case strings.TrimSpace(rule) == "":
		return celRule{}, &ruleError{at + "/rule", "rule must not be empty"}
	case len(rule) > maxRuleLength:
		return celRule{}, &ruleError{at + "/rule", fmt.Sprintf("rule is longer than %d bytes", maxRuleLength)}
	}
	r.rule = rule
	r.msg = "failed rule: " + rule
	if v, present := m["message"]; present {
		msg, ok := v.(string)
		switch {
		case !ok:
			return celRule{}, &ruleError{at + "/message", "message must be a string"}
		case len(msg) > maxRuleMessage:
			return celRule{}, &ruleError{at + "/message", fmt.Sprintf("message is longer than %d bytes", maxRuleMessage)}
		case strings.TrimSpace(msg) != "":
			r.msg = msg
		}
	}
	if v, present := m["fieldPath"]; present {
		fp, ok := v.(string)
		if !ok {
			return celRule{}, &ruleError{at + "/fieldPath", "fieldPath must be a string"}
		}
		field, err := parseFieldPath(fp)
		if err != nil {
			return celRule{}, &ruleError{at + "/fieldPath", "fieldPath: " + err.Error()}
		}
		r.field = field
	}
	env, err := celEnv()
	if err != nil {
		return celRule{}, &ruleError{at + "/rule", "cel environment: " + err.Error()}
	}
	ast, iss := env.Compile(rule)
	if iss != nil && iss.Err() != nil {
		return celRule{}, &ruleError{at + "/rule", "rule does not compile: " + celIssues(iss)}
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return celRule{}, &ruleError{at + "/rule", "rule must evaluate to a bool, not " + t.String()}
	}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "oldSelf" {
			r.transition = true
		}
	}
	var opts []cel.ProgramOption
	if est, err := env.EstimateCost(ast, specSizes{}); err == nil && est.Max <= celCostLimit {
		r.untrackedCost = max(est.Min, 1)
	} else {
		opts = append(opts, cel.CostLimit(celCostLimit))
	}
	if r.prg, err = env.Program(ast, opts...); err != nil {
		return celRule{}, &ruleError{at + "/rule", "rule does not compile: " + err.Error()}
	}
	popts := append(slices.Clip(opts), cel.EvalOptions(cel.OptPartialEval))
	r.partial = sync.OnceValues(func() (cel.Program, error) { return env.Program(ast, popts...) })
	return r, nil
}

// specSizes tells cel-go's cost estimator how large a value may be: a document's decoded
// size is capped at maxDecodedSize, which bounds the length of any string and the number
// of elements of any list or map in it.
type specSizes struct{}

func (specSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: maxDecodedSize}
}

func (specSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// celIssues spells compile errors on one line, each with its column: cel-go's own text
// repeats the source under a caret, over several lines.
func celIssues(iss *cel.Issues) string {
	var parts []string
	for _, e := range iss.Errors() {
		msg := e.Message
		if col := e.Location.Column(); col >= 0 {
			msg += fmt.Sprintf(" (column %d)", col+1)
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// parseFieldPath reads a Kubernetes-style fieldPath relative to the rule's level:
// .name, ['key with.dots'] and [index], chained, e.g. .spec.ports[0] or .labels['a.b'].
func parseFieldPath(s string) (path, error) {
	if s == "" {
		return nil, errors.New("must not be empty")
	}
	var p path
	for rest := s; rest != ""; {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, fmt.Errorf("%q: empty name after '.'", s)
			}
			p, rest = p.key(rest[:end]), rest[end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("%q: unclosed '['", s)
			}
			in := rest[1:end]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				p = p.key(in[1 : len(in)-1])
			} else if i, err := strconv.Atoi(in); err == nil && i >= 0 {
				p = p.index(i)
			} else {
				return nil, fmt.Errorf("%q: [%s] is neither a quoted key nor an index", s, in)
			}
			rest = rest[end+1:]
		default:
			return nil, fmt.Errorf("%q: must start with '.' or '['", s)
		}
	}
	return p, nil
}

// specAdapter lets rules read spec values as the loader holds them (map[string]any, []any,
// json.Number, ...) without a converted copy of each spec: maps and lists are wrapped
// lazily, and a number is converted when a rule reads it (see numberValue).
type specAdapter struct{}

func (specAdapter) NativeToValue(v any) ref.Val {
	switch x := v.(type) {
	case json.Number:
		return numberValue(x)
	case map[string]any:
		return types.NewStringInterfaceMap(specAdapter{}, x)
	case []any:
		return types.NewDynamicList(specAdapter{}, x)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// numberValue is what CEL reads for a spec number: an integer as int, a number with a
// fraction or exponent as double. An integer beyond int64 is a double, which compares
// correctly with other numbers by magnitude but keeps only 53 bits: == and % on such
// values are not exact.
func numberValue(n json.Number) ref.Val {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return types.Int(i)
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return types.String(s) // not a number at all; the loader never makes one
	}
	return types.Double(f)
}

// activation gives a rule its self and oldSelf without building a map per evaluation.
type activation struct {
	self, old any
	hasOld    bool
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "self":
		return a.self, true
	case "oldSelf":
		return a.old, a.hasOld
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// evalRules runs the rules of n and below over v (a spec value) and returns the
// violations, located below at, and what the rules cost. With transition set, only
// transition rules run, at the levels where old (the applied value, hasOld) exists too;
// otherwise only plain rules run. Items of a list are not matched with the applied list
// (no key to pair them by), so a transition rule below items never runs, as in Kubernetes
// for atomic lists. refs tells whether v or old may hold secret or output references
// (usesSecretRef, usesOutputRef): without any, no level pays for looking for them.
//
// With markers set, encrypted fields' markers are unknown places too
// (Options.EncryptedUnknown).
func (n *celNode) evalRules(v, old any, hasOld bool, at path, transition, refs, markers bool) ([]schemaProblem, uint64) {
	run := celRun{refs: refs, markers: markers}
	run.walk(n, v, old, hasOld, at, transition)
	return run.out, run.spent
}

// celRun is one resource's evaluation: what its rules have cost so far.
type celRun struct {
	refs    bool // the spec may hold secret or output references
	markers bool // encrypted fields' markers are unknown too
	spent   uint64
	over    bool // the budget ran out: the remaining rules are not evaluated
	out     []schemaProblem
}

func (run *celRun) walk(n *celNode, v, old any, hasOld bool, at path, transition bool) {
	if n == nil || run.over || (transition && (!n.transition || !hasOld)) || (!transition && !n.plain) {
		return
	}
	act := activation{self: v, old: old, hasOld: hasOld}
	var vars interpreter.Activation = &act
	varsKnown := false // whether vars accounts for the references of v and old
	partial := false   // whether vars marks some unknown
	for i := range n.rules {
		r := &n.rules[i]
		if r.transition != transition {
			continue
		}
		if run.spent >= celBudget {
			run.over = true
			run.out = append(run.out, schemaProblem{path: at, msg: fmt.Sprintf(
				"rules are too expensive to evaluate (over the cost budget of %d for one resource): %s and the rules after it were not evaluated", celBudget, r.rule)})
			return
		}
		if !varsKnown {
			// A reference's value is unknown until the action is called: its places are
			// marked unknown, and so is any access that reaches one or takes a value
			// holding one (cel-go matches patterns and accesses by their common prefix).
			varsKnown = true
			if run.refs {
				pats := refPatterns("self", v, run.markers)
				if hasOld {
					pats = append(pats, refPatterns("oldSelf", old, run.markers)...)
				}
				if len(pats) > 0 {
					vars, _ = interpreter.NewPartialActivation(&act, pats...) // errs only on nil
					partial = true
				}
			}
		}
		msg, failed, cost := r.eval(vars, partial)
		run.spent += cost
		if failed {
			run.out = append(run.out, schemaProblem{path: append(slices.Clip(at), r.field...), msg: msg})
		}
	}
	switch x := v.(type) {
	case map[string]any:
		oldMap, _ := old.(map[string]any)
		for _, p := range n.props {
			if e, ok := x[p.name]; ok {
				o, ok := oldMap[p.name]
				run.walk(p.node, e, o, ok && hasOld, at.key(p.name), transition)
			}
		}
		if n.additional != nil {
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if n.hasProp(k) {
					continue
				}
				o, ok := oldMap[k]
				run.walk(n.additional, x[k], o, ok && hasOld, at.key(k), transition)
			}
		}
	case []any:
		if n.items != nil && !transition {
			for i, e := range x {
				run.walk(n.items, e, nil, false, at.index(i), false)
			}
		}
	}
}

func (n *celNode) hasProp(name string) bool {
	_, ok := slices.BinarySearchFunc(n.props, name, func(p celProp, name string) int { return strings.Compare(p.name, name) })
	return ok
}

// refPatterns returns a pattern for the place of every secret reference, and of every string
// holding an output reference, in v, the value of the variable named; with markers, of every
// encrypted field's marker too.
func refPatterns(variable string, v any, markers bool) []*interpreter.AttributePattern {
	var out []*interpreter.AttributePattern
	var quals []any // string keys and int indexes from variable down to v
	var walk func(v any)
	walk = func(v any) {
		if len(quals) > maxDepth {
			return
		}
		if isSecretRef(v) || holdsOutputRef(v) || (markers && isMarker(v)) {
			p := interpreter.NewAttributePattern(variable)
			for _, q := range quals {
				switch q := q.(type) {
				case string:
					p.QualString(q)
				case int:
					p.QualInt(int64(q))
				}
			}
			out = append(out, p)
			return
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				quals = append(quals, k)
				walk(e)
				quals = quals[:len(quals)-1]
			}
		case []any:
			for i, e := range x {
				quals = append(quals, i)
				walk(e)
				quals = quals[:len(quals)-1]
			}
		}
	}
	walk(v)
	return out
}

// eval runs one rule; failed reports a violation with its message. Messages name the rule,
// never a value: a spec may hold decrypted secrets. With partial set, vars marks the places
// of secret references unknown: a rule whose outcome depends on one gives an unknown
// result and is skipped (it is judged when the secret is, by the action); an error or
// false is a violation as anywhere else.
func (r *celRule) eval(vars interpreter.Activation, partial bool) (msg string, failed bool, cost uint64) {
	prg := r.prg
	if partial {
		var err error
		if prg, err = r.partial(); err != nil {
			return "rule could not be evaluated: " + r.rule, true, r.untrackedCost
		}
	}
	out, det, err := prg.Eval(vars)
	cost = r.untrackedCost
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
			return fmt.Sprintf("rule is too expensive to evaluate (over the cost limit of %d): %s", celCostLimit, r.rule), true, celCostLimit
		}
		return "rule could not be evaluated: " + r.rule, true, cost
	}
	switch out {
	case types.True:
		return "", false, cost
	case types.False:
		return r.msg, true, cost
	}
	if partial && types.IsUnknown(out) {
		return "", false, cost
	}
	return "rule did not return a bool: " + r.rule, true, cost
}
