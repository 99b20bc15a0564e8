package manifest

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
)

// input is one element a ResourceSet's templates are evaluated with: an entry of
// spec.inputs or of an inputs file, crossed with a matrix combination.
type input struct {
	vals  map[string]any    // key → value, as the converter gives them
	canon map[string][]byte // key → marshalCanonical(vals[key]), encoded once
	line  int               // of the input's mapping in file
	file  string
	index int // position among its set's inputs before the matrix, for "inputs[3]"
}

// newInput makes an input of vals, which it keeps and does not modify, and encodes each
// value once.
func newInput(vals map[string]any, file string, line, index int) *input {
	in := &input{vals: vals, canon: make(map[string][]byte, len(vals)), file: file, line: line, index: index}
	for k, v := range vals {
		in.canon[k] = appendValueJSON(nil, v)
	}
	return in
}

// lookup returns the value r names in the input; at places the error.
func (in *input) lookup(r *tmplRef, at path) (any, *tmplError) {
	v, ok := in.vals[r.key]
	if !ok {
		return nil, &tmplError{at: at, msg: undefinedInput(r.key, "inputs", in.vals)}
	}
	for i, k := range r.rest {
		m, ok := v.(map[string]any)
		name := r.key
		if i > 0 {
			name += "." + strings.Join(r.rest[:i], ".")
		}
		if !ok {
			return nil, &tmplError{at: at, msg: fmt.Sprintf("input %s is %s: %s is not defined", name, article(v), r.name)}
		}
		if v, ok = m[k]; !ok {
			return nil, &tmplError{at: at, msg: undefinedInput(name+"."+k, name, m)}
		}
	}
	return v, nil
}

// undefinedInput says that name is not defined in m, listing m's keys (as label: a, b) and
// the ones name likely meant.
func undefinedInput(name, label string, m map[string]any) string {
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	fmt.Fprintf(&b, "input %s is not defined (", name)
	const most = 10
	switch {
	case len(keys) == 0 && label == "inputs":
		b.WriteString("the input has no keys")
	case len(keys) == 0:
		b.WriteString(label + " is empty")
	case len(keys) > most:
		fmt.Fprintf(&b, "%s: %s and %d more", label, strings.Join(keys[:most], ", "), len(keys)-most)
	default:
		fmt.Fprintf(&b, "%s: %s", label, strings.Join(keys, ", "))
	}
	b.WriteByte(')')
	prefix, last := "", name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		prefix, last = name[:i+1], name[i+1:]
	}
	if s := suggest(last, keys); len(s) > 0 {
		for i := range s {
			s[i] = prefix + s[i]
		}
		b.WriteString("; did you mean " + strings.Join(s, " or ") + "?")
	}
	return b.String()
}

var inputKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkInput returns the problems of an input's mapping: a key a template cannot name.
func checkInput(vals map[string]any) []tmplProblem {
	var problems []tmplProblem
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		if !inputKey.MatchString(k) {
			problems = append(problems, tmplProblem{at: path{k}, msg: fmt.Sprintf("invalid input key %q: letters, digits and _, not starting with a digit", k)})
		}
	}
	return problems
}

// parseInputs reads a file of ResourceSet inputs (YAML or JSON): each document is one input
// (a mapping) or a list of them. It applies the manifests' decoding limits; each input
// records its line, and its index counts the file's inputs from 0 (the set renumbers).
func parseInputs(data []byte, file string) ([]*input, []ValidationError) {
	var ins []*input
	var errs []ValidationError
	perrs := eachRoot(data, true, func(rd rawDoc) {
		items, list := []any{rd.value}, false
		if s, ok := rd.value.([]any); ok {
			items, list = s, true
		}
		for i, item := range items {
			var at path
			if list {
				at = path{i}
			}
			m, ok := item.(map[string]any)
			if !ok {
				errs = append(errs, ValidationError{File: file, Line: lineOf(rd.root, at), Path: at.String(), Msg: "an input must be a mapping, got " + jsonType(item)})
				continue
			}
			problems := checkInput(m)
			for _, p := range problems {
				p.at = append(at[:len(at):len(at)], p.at...)
				errs = append(errs, ValidationError{File: file, Line: lineOf(rd.root, p.at), Path: p.at.String(), Msg: p.msg})
			}
			if len(problems) == 0 {
				ins = append(ins, newInput(m, file, lineOf(rd.root, at), len(ins)))
			}
		}
	})
	for _, e := range perrs {
		e.File = file
		errs = append(errs, e)
	}
	slices.SortStableFunc(errs, func(a, b ValidationError) int { return a.Line - b.Line })
	return ins, errs
}

// matrixAxis is one key of a ResourceSet's matrix and the values it takes, in listed order.
type matrixAxis struct {
	key    string
	values []any
	line   int // of the key in the set's file
}

// clashError is a matrix key that an input also sets.
type clashError struct {
	axis *matrixAxis
	in   *input
}

func (e *clashError) Error() string {
	if e.in.file == "" {
		return fmt.Sprintf("matrix key %s is also a key of the input at line %d", e.axis.key, e.in.line)
	}
	return fmt.Sprintf("matrix key %s is also a key of the input at %s:%d", e.axis.key, e.in.file, e.in.line)
}

// productSize is the number of inputs product gives for n inputs, saturating at
// math.MaxInt: the caller checks its caps with it before any input is made.
func productSize(n int, matrix []matrixAxis) int {
	for _, a := range matrix {
		if len(a.values) == 0 {
			return 0
		}
	}
	for _, a := range matrix {
		if n > math.MaxInt/len(a.values) {
			return math.MaxInt
		}
		n *= len(a.values)
	}
	return n
}

// product crosses each input with each combination of the matrix's values: inputs in order,
// then combinations with the axes sorted by key and the last varying fastest. An input
// setting a matrix key is a *clashError. The results take their input's file and line and
// are indexed by their input's position in inputs. Without axes it returns the inputs,
// reindexed. The caller bounds productSize first: product makes every input it counts.
func product(inputs []*input, matrix []matrixAxis) ([]*input, error) {
	axes := make([]*matrixAxis, len(matrix))
	for i := range matrix {
		axes[i] = &matrix[i]
	}
	slices.SortFunc(axes, func(a, b *matrixAxis) int { return strings.Compare(a.key, b.key) })
	n := productSize(len(inputs), matrix)
	canons := make([][][]byte, len(axes))
	for i, a := range axes {
		canons[i] = make([][]byte, len(a.values))
		for j, v := range a.values {
			canons[i][j] = appendValueJSON(nil, v)
		}
	}
	for _, in := range inputs {
		for _, a := range axes {
			if _, clash := in.vals[a.key]; clash {
				return nil, &clashError{axis: a, in: in}
			}
		}
	}
	out := make([]*input, 0, min(n, 1<<20))
	var block []input // the results, allocated a block at a time
	next := func() *input {
		if len(block) == cap(block) {
			block = make([]input, 0, min(n-len(out), 1<<14))
		}
		block = block[:len(block)+1]
		return &block[len(block)-1]
	}
	pos := make([]int, len(axes))
	for j, in := range inputs {
		if len(axes) == 0 {
			c := next()
			*c = *in
			c.index = j
			out = append(out, c)
			continue
		}
		if n == 0 {
			break
		}
		clear(pos)
		for {
			c := next()
			// Clone copies a small map's one group, faster than inserting its keys anew.
			*c = input{vals: maps.Clone(in.vals), canon: maps.Clone(in.canon), line: in.line, file: in.file, index: j}
			if c.vals == nil || c.canon == nil {
				c.vals, c.canon = map[string]any{}, map[string][]byte{}
			}
			for i, a := range axes {
				c.vals[a.key] = a.values[pos[i]]
				c.canon[a.key] = canons[i][pos[i]]
			}
			out = append(out, c)
			i := len(axes) - 1
			for ; i >= 0; i-- {
				if pos[i]++; pos[i] < len(axes[i].values) {
					break
				}
				pos[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
	return out, nil
}
