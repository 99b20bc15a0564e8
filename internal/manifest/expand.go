package manifest

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/sources"
)

// ResourceSets are expanded in Load, between parsing and checking: collectSets reads each
// set's inputs and drops the files they come from, planSets checks the caps from the counts
// alone, and expandSets renders the templates into resource documents, which the rest of
// the load treats as written ones, located at their template in the set's file.

// maxSetProblems is how many problems of one set's generated resources are reported: a
// mistake in a template repeats for every input.
const maxSetProblems = 20

// genRef ties a generated document to what it was rendered from.
type genRef struct {
	t  *setTemplate
	in *input
}

// origin names the input, as ValidationError.Origin: the values the name's template reads
// (tenant=acme, region=eu-west-1); when it reads none that the input defines, the input's
// position among the set's inputs (spec.inputs, then those of inputsFrom) and the values
// of the matrix (inputs[3], region=eu-west-1).
func (g *genRef) origin() string {
	var b strings.Builder
	for _, k := range g.t.origin {
		if v, ok := g.in.vals[k]; ok { // not defined: a problem of its own
			writeOriginValue(&b, k, v)
		}
	}
	if b.Len() > 0 {
		return b.String()
	}
	b.WriteString("inputs[" + strconv.Itoa(g.in.index) + "]")
	for _, a := range g.t.set.matrix {
		writeOriginValue(&b, a.key, g.in.vals[a.key])
	}
	return b.String()
}

// writeOriginValue appends k=v to an origin.
func writeOriginValue(b *strings.Builder, k string, v any) {
	if b.Len() > 0 {
		b.WriteString(", ")
	}
	b.WriteString(k)
	b.WriteByte('=')
	switch v := v.(type) {
	case string:
		b.WriteString(v)
	case json.Number:
		b.WriteString(string(v))
	default:
		b.Write(appendValueJSON(nil, v))
	}
}

// setRun is one ResourceSet in the current load.
type setRun struct {
	p      placed
	set    *setDoc
	base   []*input // spec.inputs then inputsFrom, before the matrix
	key    string   // what the set is expanded from, for Loader.sets
	count  int      // resources it generates, saturated at math.MaxInt
	inputs int      // elements after the matrix
	docs   []document
}

// setEntry is a set expanded without problems, kept while its file, its place and its
// inputs files are unchanged: its documents keep their last check, so a revision that
// changes something else checks none of them again.
type setEntry struct {
	docs []document
}

// originOf is p's ValidationError.Origin.
func (p placed) originOf() string {
	return joinOrigin(p.origin, p.doc.gen)
}

// setOf is the ResourceSet that generated p's document, nil for a written one.
func (p placed) setOf() *setDoc {
	return p.doc.gen.setOf()
}

// setOf is the ResourceSet of g, nil for nil.
func (g *genRef) setOf() *setDoc {
	if g == nil {
		return nil
	}
	return g.t.set
}

// joinOrigin is the ValidationError.Origin of a document of a file whose own origin is
// file ("rendered by …" or empty) and that g generated (nil for a written document):
// "rendered by overlays/prod/kustomization.yaml, tenant=acme" when both are known.
func joinOrigin(file string, g *genRef) string {
	switch {
	case g == nil:
		return file
	case file == "":
		return g.origin()
	}
	return file + ", " + g.origin()
}

// docPath is where pth of p's document is in its file: below its template for a generated
// document.
func (p placed) docPath(pth path) path {
	if g := p.doc.gen; g != nil {
		return append(setPrefix(g.t.index), pth...)
	}
	return pth
}

// collectSets returns the revision's sets with their inputs, and docs without the sets'
// input files, which are data rather than manifests. A set with problems is left out; its
// problems are reported. The inputs files of a broken or duplicate set are read for their
// own problems and claimed all the same: they are not manifests either.
func (ld *load) collectSets(files []sources.File, docs []placed) ([]*setRun, []placed) {
	var runs []*setRun
	for i := range docs {
		if s := docs[i].doc.set; s != nil {
			runs = append(runs, &setRun{p: docs[i], set: s})
		}
	}
	if len(runs) == 0 {
		return nil, docs
	}
	if ld.opts.InputFiles != nil {
		files = ld.opts.InputFiles
	}
	paths := make([]string, 0, len(files))
	byPath := make(map[string]*sources.File, len(files))
	for i := range files {
		if f := &files[i]; f.Refused == "" && sources.IsManifest(f.Path) {
			paths = append(paths, f.Path)
			byPath[f.Path] = f
		}
	}
	slices.Sort(paths)
	claimed := map[string]string{} // input file → the set claiming it, for messages
	seen := map[[2]string]*setRun{}
	var ok []*setRun
	var inputErrs []ValidationError // the input files' own, once the manifest parser's are gone
	for _, run := range runs {
		s := run.set
		key := [2]string{s.namespace.String(), s.name}
		good := !s.broken
		if first := seen[key]; good && first != nil {
			for _, r := range []*setRun{first, run} {
				other := first
				if r == first {
					other = run
				}
				ld.errs = append(ld.errs, r.p.at(r.set.line, "", fmt.Sprintf("duplicate ResourceSet %s/%s (also declared at %s:%d)", key[0], key[1], other.p.file, other.set.line)))
			}
			good = false
		} else if good {
			seen[key] = run
		}
		h := sha256.New()
		fmt.Fprintf(h, "%s\x00%s\x00%d", run.p.file, run.p.key, run.p.doc.index)
		if s.hasInputs || len(s.from) > 0 {
			run.base = slices.Clone(s.inputs)
		} else {
			run.base = []*input{newInput(map[string]any{}, "", s.line, 0)}
		}
		for i, ref := range s.from {
			at := path{"spec", "inputsFrom", i, "path"}
			target, inside := joinInputsPath(run.p.file, ref.path)
			if !inside {
				ld.errs = append(ld.errs, run.p.at(ref.line, at.String(), fmt.Sprintf("%q leads out of the revision", ref.path)))
				good = false
				continue
			}
			matched := matchPaths(paths, target)
			if len(matched) == 0 {
				ld.errs = append(ld.errs, run.p.at(ref.line, at.String(), fmt.Sprintf("no YAML or JSON file at %s", target)))
				good = false
				continue
			}
			for _, f := range matched {
				fmt.Fprintf(h, "\x00%s\x00%s\x00%s", f, byPath[f].Hash, hashIfNone(byPath[f]))
				ins, errs := ld.inputs(byPath[f])
				if claimed[f] == "" { // its problems once, whatever reads it
					claimed[f] = fmt.Sprintf("%s/%s (%s:%d)", key[0], key[1], run.p.file, s.line)
					inputErrs = append(inputErrs, errs...)
				}
				good = good && len(errs) == 0
				run.base = append(run.base, ins...)
			}
		}
		if good {
			run.key = string(h.Sum(nil))
			ok = append(ok, run)
		}
	}
	if len(claimed) == 0 {
		return ok, docs
	}
	// What the manifest parser said of the input files is not for manifests (a refused
	// file is not in byPath: its refusal stands).
	ld.errs = slices.DeleteFunc(ld.errs, func(e ValidationError) bool { return claimed[e.File] != "" })
	ld.errs = append(ld.errs, inputErrs...)
	kept := docs[:0:0]
	for _, p := range docs {
		set, isInput := claimed[p.file]
		switch {
		case !isInput:
			kept = append(kept, p)
		case p.doc.apiVersion != (sym{}) && p.doc.kind != (sym{}):
			ld.errs = append(ld.errs, p.at(int(p.doc.line), "", fmt.Sprintf("an inputs file of ResourceSet %s holds a manifest (apiVersion and kind): inputs files hold inputs only", set)))
		}
	}
	return ok, kept
}

// matchPaths returns the file at target, or else the files below the folder target, in
// path order; paths is sorted.
func matchPaths(paths []string, target string) []string {
	if _, found := slices.BinarySearch(paths, target); found {
		return []string{target}
	}
	prefix := target + "/"
	if target == "." {
		prefix = ""
	}
	i, _ := slices.BinarySearch(paths, prefix)
	var out []string
	for ; i < len(paths) && strings.HasPrefix(paths[i], prefix); i++ {
		out = append(out, paths[i])
	}
	return out
}

// hashIfNone is the hash of a file's content when the source gave none.
func hashIfNone(f *sources.File) string {
	if f.Hash != "" {
		return ""
	}
	return hashJSON(f.Data)
}

// inputsEntry is an inputs file read.
type inputsEntry struct {
	ins  []*input
	errs []ValidationError
}

// inputs reads an inputs file, or takes what the last load read of it. Inputs name their
// file, hence the path in the key.
func (ld *load) inputs(f *sources.File) ([]*input, []ValidationError) {
	key := f.Path + "\x00" + f.Hash + hashIfNone(f)
	e, ok := ld.l.inputs[key]
	if !ok {
		e = &inputsEntry{}
		e.ins, e.errs = parseInputs(f.Data, f.Path)
	}
	if ld.inputsUsed == nil {
		ld.inputsUsed = map[string]*inputsEntry{}
	}
	ld.inputsUsed[key] = e
	return e.ins, e.errs
}

// planSets counts what each set generates and reports the sets over the per-set cap,
// before anything is generated. It returns the total of the sets within it.
func (ld *load) planSets(runs []*setRun, lim Limits) ([]*setRun, int) {
	total := 0
	ok := runs[:0:0]
	for _, run := range runs {
		n := productSize(len(run.base), run.set.matrix)
		run.inputs = n
		run.count = mulSat(n, len(run.set.templates))
		if run.count > lim.MaxResourcesPerSet {
			ld.errs = append(ld.errs, run.p.at(run.set.specLine, "spec", fmt.Sprintf("ResourceSet %s/%s would generate %s resources, more than the limit of %d (limits.maxResourcesPerSet in the controller config)",
				run.set.namespace, run.set.name, countWord(run.count), lim.MaxResourcesPerSet)))
			continue
		}
		if size := setSpecSize(run.set.templates, run.base, run.set.matrix, n); size > maxSetSpecBytes {
			ld.errs = append(ld.errs, run.p.at(run.set.specLine, "spec", fmt.Sprintf("ResourceSet %s/%s would render up to %d MiB of specs, more than the limit of %d MiB per set (each reference counted at its input's largest value)",
				run.set.namespace, run.set.name, size>>20, maxSetSpecBytes>>20)))
			continue
		}
		ok = append(ok, run)
		total += run.count
	}
	return ok, total
}

func countWord(n int) string {
	if n == math.MaxInt {
		return "more than " + strconv.Itoa(math.MaxInt)
	}
	return strconv.Itoa(n)
}

// mulSat is a×b for non-negative a and b, saturated at math.MaxInt.
func mulSat(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

// genBatch is how many inputs one worker renders at a time.
const genBatch = 1024

// genProblem is a problem of a generated document, at pth of its document (relative to
// its template), with the line of at in the set's document.
type genProblem struct {
	k   int // in run.docs
	at  path
	msg string
}

// expandSets renders every set, or takes its documents from the cache, and appends the
// generated documents to docs.
func (ld *load) expandSets(runs []*setRun, docs []placed) []placed {
	used := map[string]*setEntry{}
	defer func() { ld.l.sets, ld.l.inputs = used, ld.inputsUsed }()
	total := 0
	for _, run := range runs {
		total += run.count
	}
	docs = slices.Grow(docs, total)
	for _, run := range runs {
		if e, ok := ld.l.sets[run.key]; ok {
			used[run.key], run.docs = e, e.docs
			for k := range run.docs {
				docs = append(docs, placed{source: run.p.source, doc: &run.docs[k]})
			}
			continue
		}
		s := run.set
		ins, err := crossAll(run.base, s.matrix)
		if err != nil {
			var clash *clashError
			if errors.As(err, &clash) {
				file := clash.in.file
				if file == "" {
					file = run.p.file
				}
				ld.errs = append(ld.errs, run.p.at(clash.axis.line, "spec.matrix."+clash.axis.key,
					fmt.Sprintf("matrix key %s is also a key of the input at %s:%d", clash.axis.key, file, clash.in.line)))
			} else {
				ld.errs = append(ld.errs, run.p.at(s.specLine, "spec", err.Error()))
			}
			continue
		}
		nt := len(s.templates)
		run.docs = make([]document, len(ins)*nt)
		res := make([]resourceDoc, len(ins)*nt)
		gens := make([]genRef, len(ins)*nt)
		metas := make([]*resourceMeta, nt)
		shared := metaSets{}
		for ti := range s.templates {
			if t := &s.templates[ti]; t.constMeta {
				labels, annotations, _ := t.meta(nil, s.name)
				metas[ti] = shared.get(labels, annotations)
			}
		}
		batches := (len(ins) + genBatch - 1) / genBatch
		problems := make([][]genProblem, batches)
		parallel(batches, func(b int) {
			var buf []byte
			sets := metaSets{}
			for e := b * genBatch; e < min(len(ins), (b+1)*genBatch); e++ {
				for ti := range s.templates {
					k := e*nt + ti
					gens[k] = genRef{t: &s.templates[ti], in: ins[e]}
					run.docs[k] = document{index: run.p.doc.index, line: int32(gens[k].t.line), apiVersion: gens[k].t.apiVersion, kind: gens[k].t.kind,
						apiVersionLine: int32(gens[k].t.apiVersionLine), kindLine: int32(gens[k].t.kindLine), res: &res[k], gen: &gens[k]}
					var ps []genProblem
					buf, ps = generate(&res[k], &gens[k], s, metas[ti], sets, buf)
					for _, p := range ps {
						p.k = k
						problems[b] = append(problems[b], p)
					}
				}
			}
		})
		clean := true
		for _, ps := range problems {
			for _, pr := range ps {
				p := placed{source: run.p.source, doc: &run.docs[pr.k]}
				ld.errs = append(ld.errs, p.at(ld.lineOf(p, pr.at), pr.at.String(), pr.msg))
				clean = false
			}
		}
		if clean {
			used[run.key] = &setEntry{docs: run.docs}
		}
		for k := range run.docs {
			docs = append(docs, placed{source: run.p.source, doc: &run.docs[k]})
		}
	}
	return docs
}

// generate renders one resource document into r, as decodeResource would decode it if it
// were written: buf is scratch space, returned for reuse. meta is the template's shared
// labels and annotations when none is templated.
func generate(r *resourceDoc, g *genRef, s *setDoc, meta *resourceMeta, sets metaSets, buf []byte) ([]byte, []genProblem) {
	var problems []genProblem
	fail := func(err *tmplError, base ...any) {
		problems = append(problems, genProblem{at: append(path(base), err.at...), msg: err.msg})
	}
	t := g.t
	*r = resourceDoc{namespace: s.namespace, meta: meta}
	name, err := t.name.str(g.in)
	switch {
	case err != nil:
		fail(err, "metadata", "name")
	case !validLabel(name):
		problems = append(problems, genProblem{at: path{"metadata", "name"}, msg: fmt.Sprintf("invalid name %q: %s", name, labelHelp)})
	default:
		r.name = name
	}
	if !t.constMeta {
		labels, annotations, err := t.meta(g.in, s.name)
		if err != nil {
			fail(err, "metadata")
		}
		r.meta = sets.get(labels, annotations)
	}
	if len(t.deps) > 0 {
		ns := s.namespace.String()
		self := graph.ID{Kind: t.kind.String(), Namespace: ns, Name: r.name}
		ids := make([]graph.ID, 0, len(t.deps))
		for _, dt := range t.deps {
			id, ps := dt.eval(g.in, ns, self)
			problems = append(problems, ps...)
			if id.Name != "" {
				ids = append(ids, id)
			}
		}
		slices.SortStableFunc(ids, compareIDs)
		if ids = slices.CompactFunc(ids, sameID); len(ids) > 0 {
			r.deps = &docDeps{explicit: slices.Clip(ids), key: encodeIDs(ids)}
		}
	}
	if t.spec != nil {
		var err *tmplError
		buf, err = t.spec.appendJSON(buf[:0], g.in)
		switch {
		case err != nil:
			fail(err, "spec")
			r.specBad = true
		case len(buf) == 0 || buf[0] != '{':
			v, _ := decodeNumbers(buf)
			problems = append(problems, genProblem{at: path{"spec"}, msg: "must be a mapping, got " + jsonType(v)})
			r.specBad = true
		default:
			r.written, r.hasSpec = string(buf), true
		}
	}
	return buf, problems
}

// meta returns the template's labels, with the set's label, and annotations for in (nil:
// the template has no templated value).
func (t *setTemplate) meta(in *input, set string) (labels, annotations map[string]string, err *tmplError) {
	labels = make(map[string]string, len(t.labels)+1)
	for _, mt := range t.labels {
		if labels[mt.key], err = mt.val.str(in); err != nil {
			err.at = append(path{"labels", mt.key}, err.at...)
			return nil, nil, err
		}
	}
	labels[LabelResourceSet] = set
	if len(t.annotations) > 0 {
		annotations = make(map[string]string, len(t.annotations))
	}
	for _, mt := range t.annotations {
		if annotations[mt.key], err = mt.val.str(in); err != nil {
			err.at = append(path{"annotations", mt.key}, err.at...)
			return nil, nil, err
		}
	}
	return labels, annotations, nil
}

// eval renders a dependsOn entry, checked as decodeResource checks a written one; the
// zero ID when it has problems.
func (dt *depTemplate) eval(in *input, ns string, self graph.ID) (graph.ID, []genProblem) {
	at := path{"dependsOn", dt.index}
	var problems []genProblem
	str := func(t *tmpl, key string) string {
		s, err := t.str(in)
		if err != nil {
			problems = append(problems, genProblem{at: append(at.key(key), err.at...), msg: err.msg})
		}
		return s
	}
	id := graph.ID{Kind: str(dt.kind, "kind"), Namespace: ns, Name: str(dt.name, "name")}
	if dt.namespace != nil {
		id.Namespace = str(dt.namespace, "namespace")
	}
	if len(problems) > 0 {
		return graph.ID{}, problems
	}
	if !validKind(id.Kind) {
		problems = append(problems, genProblem{at: at.key("kind"), msg: fmt.Sprintf("invalid kind %q: %s", id.Kind, kindHelp)})
	}
	if !validLabel(id.Name) {
		problems = append(problems, genProblem{at: at.key("name"), msg: fmt.Sprintf("invalid name %q: %s", id.Name, labelHelp)})
	}
	if !validLabel(id.Namespace) {
		problems = append(problems, genProblem{at: at.key("namespace"), msg: fmt.Sprintf("invalid namespace %q: %s", id.Namespace, labelHelp)})
	}
	if len(problems) == 0 && sameID(id, self) {
		problems = append(problems, genProblem{at: at, msg: "a resource cannot depend on itself"})
	}
	if len(problems) > 0 {
		return graph.ID{}, problems
	}
	return id, nil
}

// crossAll is product, the inputs crossed in parallel batches: a set of 1,000 inputs and
// a matrix of 100 makes 100,000 inputs of two maps each.
func crossAll(base []*input, matrix []matrixAxis) ([]*input, error) {
	if len(matrix) == 0 || len(base) < 2 {
		return product(base, matrix)
	}
	const chunk = 64
	n := (len(base) + chunk - 1) / chunk
	parts := make([][]*input, n)
	errs := make([]error, n)
	parallel(n, func(i int) {
		parts[i], errs[i] = product(base[i*chunk:min(len(base), (i+1)*chunk)], matrix)
		for _, in := range parts[i] {
			in.index += i * chunk // its input's position in base
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err // the first input's, as product reports
		}
	}
	return slices.Concat(parts...), nil
}

// setInfos is Set.ResourceSets.
func setInfos(runs []*setRun) []ResourceSetInfo {
	if len(runs) == 0 {
		return nil
	}
	out := make([]ResourceSetInfo, 0, len(runs))
	for _, run := range runs {
		out = append(out, ResourceSetInfo{Namespace: run.set.namespace.String(), Name: run.set.name, File: run.p.file, Line: run.p.line(run.set.line),
			Inputs: run.inputs, Members: len(run.docs)})
	}
	slices.SortFunc(out, func(a, b ResourceSetInfo) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// setSpan is where a set stands: the generated resources' problems are located there.
type setSpan struct {
	file string
	set  *setDoc
}

// runSpans are the spans of runs.
func runSpans(runs []*setRun) []setSpan {
	out := make([]setSpan, len(runs))
	for i, r := range runs {
		out[i] = setSpan{file: r.p.file, set: r.set}
	}
	return out
}

// capSetProblems keeps the first maxSetProblems problems of each set's generated
// resources (errs sorted) and says, after them, how many more there are.
func capSetProblems(errs Errors, sets []setSpan) Errors {
	if len(sets) == 0 {
		return errs
	}
	of := make([]int, len(errs)) // the set of each problem, -1 for none
	total := make([]int, len(sets))
	for j, e := range errs {
		of[j] = -1
		if e.set != nil {
			of[j] = slices.IndexFunc(sets, func(r setSpan) bool { return r.file == e.File && r.set == e.set })
		} else if e.Origin != "" && !strings.HasPrefix(e.Origin, "rendered by ") {
			of[j] = slices.IndexFunc(sets, func(r setSpan) bool {
				return r.file == e.File && r.set.line <= e.Line && e.Line <= r.set.lastLine
			})
		}
		if of[j] >= 0 {
			total[of[j]]++
		}
	}
	out := make(Errors, 0, len(errs))
	kept := make([]int, len(sets))
	for j, e := range errs {
		e.set = nil
		i := of[j]
		if i < 0 {
			out = append(out, e)
			continue
		}
		if kept[i]++; kept[i] > maxSetProblems {
			continue
		}
		out = append(out, e)
		if kept[i] == maxSetProblems && total[i] > maxSetProblems {
			r := sets[i]
			out = append(out, ValidationError{File: e.File, Line: e.Line, Msg: fmt.Sprintf("… and %d more problems of ResourceSet %s/%s in other inputs", total[i]-maxSetProblems, r.set.namespace, r.set.name)})
		}
	}
	return out
}
