package manifest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trueup-dev/trueup/sources"
)

// Options are what a Load needs to know beyond the files.
type Options struct {
	// KnownTypes: types declared elsewhere (another source) that resources may use. A type
	// declared in the files with the same name wins over a known one.
	KnownTypes []ResourceType
	// CheckAction, when set, is called for each type's action; a non-nil error is reported at
	// the type's file:line with path "spec.action", or "spec.action.with" if the message is
	// about with: it starts with "with: " or "with.<field>: " (the prefix then moves into the
	// path), or mentions "with:" or "with." further on. Wrap errors of
	// actions.WithValidator as fmt.Errorf("with: %w", err) to get the precise path.
	CheckAction func(name string, with json.RawMessage) error
}

// Loader parses and validates revisions. Between loads it keeps the documents parsed from
// each file content (by sources.File.Hash) and each compiled schema (by content hash), so a
// revision that changes one file costs one file's parsing. It keeps only what the latest Load
// used, so memory follows the size of the repository, not its history.
//
// A Loader is safe for concurrent use; loads are serialised.
type Loader struct {
	mu      sync.Mutex
	files   map[string]*fileEntry
	schemas map[string]*compiledSchema
}

// NewLoader returns a Loader with empty caches.
func NewLoader() *Loader {
	return &Loader{files: map[string]*fileEntry{}, schemas: map[string]*compiledSchema{}}
}

// fileEntry is what one file content parses to, independent of its path.
type fileEntry struct {
	docs []*document
	errs []ValidationError // file-level problems; File is left empty
}

// placed is a document at the path it has in the current load.
type placed struct {
	file string
	key  string // cache key of the file's content
	data []byte
	doc  *document
}

func (p placed) at(line int, pth, msg string) ValidationError {
	return ValidationError{File: p.file, Line: line, Path: pth, Msg: msg}
}

// typeInfo is what resources are checked against: a type from the files or a known one.
type typeInfo struct {
	name     string
	group    string
	versions []string                   // as declared, for messages
	schemas  map[string]*compiledSchema // by version name; absent when the schema is broken
	// broken is set when the declaration itself has problems: its resources are then not
	// told that their version is missing, which would only repeat the type's errors.
	broken bool
}

// load is the state of one Load call.
type load struct {
	l       *Loader
	opts    Options
	errs    Errors
	schemas map[string]*compiledSchema // used by this load, becomes the schema cache

	// The last file parsed again to locate errors in cached documents. Documents are
	// visited file by file, so one entry is enough and no node tree outlives its file.
	memoKey string
	memo    []rawDoc
}

// Load parses every file and validates everything. On any problem it returns (nil, Errors)
// listing all problems found; the revision then must not be applied.
func (l *Loader) Load(files []sources.File, opts Options) (*Set, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ld := &load{l: l, opts: opts, schemas: map[string]*compiledSchema{}}
	docs := ld.parse(files)
	types, infos := ld.types(docs)
	resources := ld.resources(docs, infos)
	l.schemas = ld.schemas
	if len(ld.errs) > 0 {
		return nil, sortErrors(ld.errs)
	}
	slices.SortFunc(types, func(a, b ResourceType) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(resources, func(a, b Resource) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return &Set{Types: types, Resources: resources}, nil
}

// parse returns the documents of all files in path order, parsing in parallel the contents
// not cached yet, and collects the problems found in single documents.
func (ld *load) parse(files []sources.File) []placed {
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(files[a].Path, files[b].Path) })

	keys := make([]string, len(files))
	entries := make([]*fileEntry, len(files))
	used := make(map[string]*fileEntry, len(files))
	var todo []int
	for _, i := range order {
		key := files[i].Hash
		if key == "" {
			key = "sha256:" + hashJSON(files[i].Data)
		}
		keys[i] = key
		if e, ok := ld.l.files[key]; ok {
			used[key] = e
		} else if _, scheduled := used[key]; !scheduled {
			used[key] = nil
			todo = append(todo, i)
		}
	}

	parallel(len(todo), func(j int) {
		entries[todo[j]] = parseFile(files[todo[j]].Data)
	})
	for _, i := range todo {
		used[keys[i]] = entries[i]
	}
	ld.l.files = used

	var docs []placed
	for _, i := range order {
		f, e := files[i], used[keys[i]]
		for _, ve := range e.errs {
			ve.File = f.Path
			ld.errs = append(ld.errs, ve)
		}
		for _, d := range e.docs {
			for _, ve := range d.errs {
				ve.File = f.Path
				ld.errs = append(ld.errs, ve)
			}
			docs = append(docs, placed{file: f.Path, key: keys[i], data: f.Data, doc: d})
		}
	}
	return docs
}

func parseFile(data []byte) *fileEntry {
	raw, errs := parseStream(data)
	e := &fileEntry{errs: errs}
	for _, rd := range raw {
		if rd.value != nil {
			e.docs = append(e.docs, decodeDocument(rd))
		}
	}
	return e
}

// schema returns the compiled schema for content, from the cache when possible.
func (ld *load) schema(hash string, raw json.RawMessage) *compiledSchema {
	if cs, ok := ld.schemas[hash]; ok {
		return cs
	}
	cs, ok := ld.l.schemas[hash]
	if !ok {
		cs = compileSchema(raw, hash)
	}
	ld.schemas[hash] = cs
	return cs
}

// rawDoc parses p's file again to find the nodes of its document, for error lines.
func (ld *load) rawDoc(p placed) (rawDoc, bool) {
	if ld.memoKey != p.key || ld.memo == nil {
		ld.memo, _ = parseStream(p.data)
		ld.memoKey = p.key
	}
	for _, rd := range ld.memo {
		if rd.index == p.doc.index {
			return rd, true
		}
	}
	return rawDoc{}, false
}

// types validates the declared types as a whole (schemas, actions, duplicates) and returns
// them with the registry resources are checked against.
func (ld *load) types(docs []placed) ([]ResourceType, map[string]*typeInfo) {
	infos := map[string]*typeInfo{}
	for _, kt := range ld.opts.KnownTypes {
		infos[kt.Name] = ld.knownType(kt)
	}

	var out []ResourceType
	declared := map[string][]placed{}
	fromFiles := map[string]bool{}
	for _, p := range docs {
		t := p.doc.typ
		if t == nil {
			continue
		}
		ti := &typeInfo{name: t.name, group: t.group, schemas: map[string]*compiledSchema{}, broken: len(p.doc.errs) > 0}
		rt := ResourceType{
			Name:           t.name,
			Group:          t.group,
			Description:    t.description,
			Action:         ActionRef{Name: t.action.Name, With: bytes.Clone(t.action.With)},
			ResyncInterval: cloneDuration(t.resync),
			Spec:           bytes.Clone(t.spec),
			Hash:           t.hash,
			File:           p.file,
			Line:           p.doc.line,
		}
		for _, v := range t.versions {
			cs := ld.schema(v.schemaHash, v.schema)
			if cs.schema == nil {
				ld.compileError(p, v, cs)
				ti.broken = true
			}
			if v.name == "" {
				continue
			}
			ti.versions = append(ti.versions, v.name)
			rt.Versions = append(rt.Versions, Version{Name: v.name, Schema: bytes.Clone(v.schema)})
			if cs.schema != nil {
				ti.schemas[v.name] = cs
			}
		}
		if ld.opts.CheckAction != nil && t.action.Name != "" {
			if err := ld.opts.CheckAction(t.action.Name, t.action.With); err != nil {
				pth, msg := actionProblem(err)
				ld.errs = append(ld.errs, p.at(p.doc.line, pth, msg))
			}
		}
		out = append(out, rt)
		if t.name == "" {
			continue
		}
		declared[t.name] = append(declared[t.name], p)
		if !fromFiles[t.name] {
			// The first declaration serves the resources; duplicates are errors below.
			infos[t.name] = ti
			fromFiles[t.name] = true
		}
	}
	for name, ps := range declared {
		for _, p := range ps {
			if others := elsewhere(p, ps); others != "" {
				ld.errs = append(ld.errs, p.at(p.doc.line, "", fmt.Sprintf("duplicate ResourceType %s (also declared at %s)", name, others)))
			}
		}
	}
	return out, infos
}

func (ld *load) knownType(kt ResourceType) *typeInfo {
	ti := &typeInfo{name: kt.Name, group: kt.Group, schemas: map[string]*compiledSchema{}}
	for _, v := range kt.Versions {
		ti.versions = append(ti.versions, v.Name)
		canon, err := Canonical(v.Schema)
		if err != nil {
			continue // a known type was validated by its own source; nothing to report here
		}
		if cs := ld.schema(hashJSON(canon), canon); cs.schema != nil {
			ti.schemas[v.Name] = cs
		}
	}
	return ti
}

func (ld *load) compileError(p placed, v versionDoc, cs *compiledSchema) {
	base := path{"spec", "versions", v.index, "schema"}
	line, where := p.doc.line, ""
	if rd, ok := ld.rawDoc(p); ok {
		var schema any
		if spec, ok := rd.value.(map[string]any)["spec"].(map[string]any); ok {
			if vs, ok := spec["versions"].([]any); ok && v.index < len(vs) {
				if vm, ok := vs[v.index].(map[string]any); ok {
					schema = vm["schema"]
				}
			}
		}
		inner := pointerPath(nil, schema, cs.errPtr)
		line = lineOf(rd.root, append(slices.Clip(base), inner...))
		if len(inner) > 0 {
			where = " at " + inner.String()
		}
	}
	ld.errs = append(ld.errs, p.at(line, base.String(), "invalid schema"+where+": "+cs.errMsg))
}

var aboutWith = regexp.MustCompile(`\bwith[:.]`)

// actionProblem places a CheckAction error at spec.action or, when it is about the with
// parameters, at spec.action.with (or the field of with it names).
func actionProblem(err error) (pth, msg string) {
	msg = err.Error()
	if rest, ok := strings.CutPrefix(msg, "with: "); ok {
		return "spec.action.with", rest
	}
	if rest, ok := strings.CutPrefix(msg, "with."); ok {
		if field, m, ok := strings.Cut(rest, ": "); ok && field != "" && !strings.ContainsAny(field, " \t") {
			return "spec.action.with." + field, m
		}
	}
	if aboutWith.MatchString(msg) {
		return "spec.action.with", msg
	}
	return "spec.action", msg
}

// elsewhere lists the places of ps other than p, as file:line.
func elsewhere(p placed, ps []placed) string {
	var s []string
	for _, o := range ps {
		if o.file != p.file || o.doc != p.doc {
			s = append(s, fmt.Sprintf("%s:%d", o.file, o.doc.line))
		}
	}
	return strings.Join(s, ", ")
}

type identity struct{ namespace, kind, name string }

// resources checks every resource against its type and returns them.
func (ld *load) resources(docs []placed, infos map[string]*typeInfo) []Resource {
	type item struct {
		p  placed
		cs *compiledSchema
	}
	var items []item
	var stale []item // whose cached validation ran against another schema, or none
	queued := map[*resourceDoc]bool{}
	ids := map[identity][]placed{}
	for _, p := range docs {
		r := p.doc.res
		if r == nil {
			continue
		}
		if r.name != "" {
			id := identity{r.namespace, p.doc.kind, r.name}
			ids[id] = append(ids[id], p)
		}
		ti := infos[p.doc.kind]
		if ti == nil {
			ld.errs = append(ld.errs, p.at(p.doc.kindLine, "kind", fmt.Sprintf("unknown kind %s (no ResourceType declares it)", p.doc.kind)))
			continue
		}
		if r.group == "" || r.specBad {
			continue // already reported, and nothing to check further
		}
		cs, ok := ti.schemas[r.version]
		if r.group != ti.group || !ok {
			if !ti.broken && (r.group != ti.group || !slices.Contains(ti.versions, r.version)) {
				ld.errs = append(ld.errs, p.at(p.doc.apiVersionLine, "apiVersion", notServed(p.doc.apiVersion, ti)))
			}
			continue
		}
		it := item{p, cs}
		items = append(items, it)
		// The same content under two paths shares one document: check it once.
		if r.checkedWith != cs.hash && !queued[r] {
			queued[r] = true
			stale = append(stale, it)
		}
	}
	for id, ps := range ids {
		if len(ps) < 2 {
			continue
		}
		for _, p := range ps {
			msg := fmt.Sprintf("duplicate resource %s/%s/%s (also declared at %s)", id.namespace, id.kind, id.name, elsewhere(p, ps))
			ld.errs = append(ld.errs, p.at(p.doc.line, "", msg))
		}
	}

	// Validation dominates a first sync; each document is independent and compiled
	// schemas are read-only, so spread it over the CPUs.
	specs := make([]any, len(stale))
	for i, it := range stale {
		specs[i] = ld.spec(it.p)
	}
	problems := make([][]schemaProblem, len(stale))
	parallel(len(stale), func(i int) {
		if specs[i] != nil {
			problems[i] = check(stale[i].p.doc.res, specs[i], stale[i].cs)
		}
	})
	// Locating problems may parse files again: done in file order, one file at a time.
	for i, it := range stale {
		it.p.doc.res.specErrs = ld.locate(it.p, problems[i])
	}

	out := make([]Resource, 0, len(items))
	for _, it := range items {
		p, r := it.p, it.p.doc.res
		for _, ve := range r.specErrs {
			ve.File = p.file
			ld.errs = append(ld.errs, ve)
		}
		if r.metaFile != p.file || r.metaHash == "" {
			meta, err := marshalCanonical(map[string]any{
				"apiVersion":  p.doc.apiVersion,
				"labels":      cloneMap(r.labels),
				"annotations": cloneMap(r.annotations),
				"file":        p.file,
			})
			if err != nil {
				ld.errs = append(ld.errs, p.at(p.doc.line, "metadata", "cannot encode as JSON: "+err.Error()))
				continue
			}
			r.metaFile, r.metaHash = p.file, hashJSON(meta)
		}
		// Copies, so that a caller changing its Set cannot change the cache.
		out = append(out, Resource{
			APIVersion:  p.doc.apiVersion,
			Kind:        p.doc.kind,
			Namespace:   r.namespace,
			Name:        r.name,
			Labels:      cloneMap(r.labels),
			Annotations: cloneMap(r.annotations),
			Spec:        bytes.Clone(r.specJSON),
			SpecHash:    r.specHash,
			MetaHash:    r.metaHash,
			File:        p.file,
			Line:        p.doc.line,
		})
	}
	return out
}

func notServed(apiVersion string, ti *typeInfo) string {
	avail := make([]string, len(ti.versions))
	for i, v := range ti.versions {
		avail[i] = ti.group + "/" + v
	}
	return fmt.Sprintf("apiVersion %s is not served by ResourceType %s (available: %s)", apiVersion, ti.name, strings.Join(avail, ", "))
}

// spec returns the spec of p's resource as written, parsing its file again when the
// cache has dropped it.
func (ld *load) spec(p placed) any {
	r := p.doc.res
	switch {
	case !r.hasSpec:
		return map[string]any{}
	case r.spec != nil:
		return r.spec
	}
	if rd, ok := ld.rawDoc(p); ok {
		if spec, ok := rd.value.(map[string]any)["spec"].(map[string]any); ok {
			return spec
		}
	}
	// Only a source that hands out different data under one hash gets here.
	ld.errs = append(ld.errs, p.at(p.doc.line, "", "file content differs from what its hash stood for in the previous load"))
	return nil
}

// check applies cs's defaults to spec, validates it and records the stored form in r,
// where it stays valid for as long as the schema does. It returns the problems found, which
// still need lines.
func check(r *resourceDoc, spec any, cs *compiledSchema) []schemaProblem {
	r.spec = nil
	v, _ := cs.defaults.apply(spec)
	problems := cs.validate(v, path{"spec"})
	canon, err := marshalCanonical(v)
	if err != nil {
		problems = append(problems, schemaProblem{path: path{"spec"}, msg: "cannot encode as JSON: " + err.Error()})
	}
	r.specJSON, r.specHash, r.checkedWith = canon, hashJSON(canon), cs.hash
	return problems
}

// locate turns problems in p's spec into ValidationErrors at the lines of the YAML nodes
// they concern, or at the nearest node that exists (a default has no line).
func (ld *load) locate(p placed, problems []schemaProblem) []ValidationError {
	if len(problems) == 0 {
		return nil
	}
	rd, ok := ld.rawDoc(p)
	out := make([]ValidationError, 0, len(problems))
	for _, pr := range problems {
		line := p.doc.line
		if ok {
			at := pr.path
			if pr.at != nil {
				at = pr.at
			}
			line = lineOf(rd.root, at)
		}
		out = append(out, ValidationError{Line: line, Path: pr.path.String(), Msg: pr.msg})
	}
	return out
}

// parallel calls fn(0..n-1) on up to GOMAXPROCS goroutines and waits for them.
func parallel(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

// cloneMap copies m, giving an empty map for nil: Resource promises non-nil maps.
func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}

func cloneDuration(d *time.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

// LoadDir reads every *.yaml, *.yml and *.json file under dir, skipping directories whose
// name starts with a dot (.git), and loads them with paths relative to dir. It serves
// `trueup validate`, which checks a working tree before it is pushed.
func (l *Loader) LoadDir(dir string, opts Options) (*Set, error) {
	var files []sources.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !sources.IsManifest(d.Name()) {
			return nil
		}
		if !d.Type().IsRegular() {
			// A symlink counts when it leads to a regular file; anything else is skipped.
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				return nil
			}
		}
		data, err := readLimited(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, sources.File{Path: filepath.ToSlash(rel), Hash: hashJSON(data), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read manifests in %s: %w", dir, err)
	}
	return l.Load(files, opts)
}

// readLimited reads at most one byte past the size limit: enough for Load to report the
// file as too large without holding all of it.
func readLimited(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFileSize+1))
}
