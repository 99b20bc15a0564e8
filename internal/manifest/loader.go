package manifest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"iter"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/sources"
)

// Options are what a Load needs to know beyond the files.
type Options struct {
	// KnownTypes: types declared elsewhere (another source) that resources may use. A type
	// declared in the files with the same name wins over a known one.
	KnownTypes []ResourceType
	// CheckAction, when set, is called for each type's action; a non-nil error is reported
	// with path "spec.action", or "spec.action.with" if the message is about with: it starts
	// with "with: " or "with.<field>: " (the prefix then moves into the path), or mentions
	// "with:" or "with." further on; its line is that of the path's deepest key in the file. Wrap errors of
	// actions.WithValidator as fmt.Errorf("with: %w", err) to get the precise path.
	CheckAction func(name string, with json.RawMessage) error
	// Limits caps the revision's files, documents and resources; zero fields take the
	// defaults.
	Limits Limits
	// InputFiles, when set, are the files a ResourceSet's spec.inputsFrom is resolved in,
	// instead of the files loaded: the revision as fetched when the files loaded are a
	// renderer's output, which holds no inputs file (an inputs file is not a resource).
	InputFiles []sources.File
	// EncryptedUnknown: a spec string that is an encrypted field's marker
	// (EncryptedMarkerPrefix…) stands for a value not known, as a secret reference does:
	// schema problems at it are dropped and a rule whose outcome depends on it is skipped,
	// in Load and in CheckTransitions. A preview loads a pull request this way, without
	// decrypting (sealed.LoadMasked): its author writes the rules.
	EncryptedUnknown bool
	// CheckReference, when set, is asked about every dependency in another namespace than
	// its resource's (from): target, and the output paths read (none for a plain
	// dependsOn). A non-nil error is reported at the resource's file:line, path spec (or
	// dependsOn). The controller config's grants (internal/crossref) answer it.
	CheckReference func(from string, target graph.ID, outputs []string) error
	// Parsed, when set, is called once every document is decoded and every ResourceSet
	// expanded (documents counts the generated ones), before types and resources are checked
	// against their schemas: the syncer's trace splits parse from validate there. A load
	// from the last Set (incremental.go) calls it once it has succeeded, its checks done:
	// one that gives up is followed by a full load, which calls it, and it is called once.
	Parsed func(documents int)
	// ReuseSet says the caller holds no Set of this Loader past its next Load (a syncer,
	// whose syncs take turns and apply each Set before loading the next): a revision may
	// then be written into the last Set's resources in place, rather than into a copy of
	// them, if the caller handed that Set back (Loader.Release) since it was returned:
	// changed resources take their places, and added and removed ones move the others (the
	// released Set's resources are then reordered and may be cut short); a revision that is
	// rejected leaves the handed-back Set as it was. Its Sets keep room for a few more
	// resources.
	ReuseSet bool
	// DropData lets a load of a revision whose documents the Loader does not keep (past
	// 50,000 resources) set the Data of the files it was given to nil and mark them Unread,
	// so that a first sync does not hold every file's bytes beside its documents and its Set:
	// the caller gives the data up (the files of Rewritten keep theirs, as do all when a
	// resource's type version has transition rules). A revision that likely is that large
	// (earlyDrop: counted by its separators) gives each file of resources up as soon as it is
	// parsed, even one that then proves smaller (its other files keep their data); a lean
	// load gives the rest up once every document is parsed and the types are known. Such a
	// load that finds a problem that needs the data (a schema problem's line), or that
	// guessed wrong (a ResourceSet or a transition rule after all), returns ErrDataNeeded:
	// the caller loads again without DropData.
	DropData bool
	// Packed says the caller reads the Set's resources through Set.Len, Set.At and Set.All,
	// never Set.Resources: a load whose documents the Loader drops (past 50,000 resources,
	// without Rewritten files) then returns them encoded (Set.Packed), which the Set decodes a
	// chunk at a time as they are read, and the Loader keeps them so as its basis, with
	// nothing to encode at rest. A load from such a basis without dependencies merges the
	// change into the encoding: only the chunks that hold resources of the changed files are
	// decoded and encoded again, and its Set is packed too. A first sync of a million
	// resources holds about 100 MB of encoded resources through its apply instead of 330 MB
	// of decoded ones, and a one-file change no longer decodes them all.
	Packed bool
	// Rewritten names the files (by path) whose resources the caller changes in the Set once
	// it is loaded (sealed: an encrypted file's redacted fields, its hashes and the file kept
	// with each resource). The next load never takes those files' resources from the last
	// Set: it builds them again, as a full load does.
	Rewritten map[string]bool
}

// EncryptedMarkerPrefix starts the value kept in place of an encrypted field
// (sealed.MarkerPrefix).
const EncryptedMarkerPrefix = "*** sops:"

// Loader parses and validates revisions. Between loads it keeps the documents parsed from
// each file content (by sources.File.Hash) and each compiled schema (by content hash), so a
// revision that changes one file costs one file's parsing. It keeps only what the latest Load
// used, so memory follows the size of the repository, not its history, and drops the
// documents of a revision of more than defaultKeepDocuments resources once that revision is
// the basis of incremental loads (and, while it keeps a basis, those of a failed load that
// large). A revision that
// changes only files of resources is loaded from the last Set returned (incremental.go):
// its work follows the files changed, not the revision. The next Set shares that Set's
// resources (their specs, maps and slices): a caller reads a Set and never changes it, but
// for the resources of the files it names in Options.Rewritten, which are never shared. A
// load leaves the Sets returned before as they were, unless Options.ReuseSet.
//
// A Loader is safe for concurrent use; loads are serialised.
type Loader struct {
	mu    sync.Mutex
	files map[string]*fileEntry
	// sets holds each ResourceSet's generated documents and inputs each file's inputs, by
	// what they were made from (expand.go), as files holds parsed documents.
	sets    map[string]*setEntry
	inputs  map[string]*inputsEntry
	schemas map[string]*compiledSchema
	// revisionBudget is celRevisionBudget; tests lower it.
	revisionBudget uint64
	// encryptedUnknown is the Options.EncryptedUnknown of the cached checks.
	encryptedUnknown bool
	// sorted is the last Set's resources in its order (sortedOrder): a document's
	// identity never changes, so the resources a load keeps stay in that order.
	sorted []*resourceDoc
	// last is what the next load may start from instead of every file (incremental.go);
	// nil when it must load every file.
	last *basis
	// incrementals counts the loads made from a basis, leans the full loads that built their
	// Set through the encoded form (leanResources), for tests.
	incrementals, leans int
	// keepDocuments is defaultKeepDocuments; tests lower it.
	keepDocuments int
	// compactAfter is defaultCompactAfter; tests change it (0 or less: at once, in Release).
	compactAfter time.Duration
	// restTimer runs compactAtRest compactAfter after the last Release.
	restTimer *time.Timer
	// waiting counts the calls waiting for mu (lock), which the encoding at rest gives way to;
	// gaveWay counts the times in a row it did for the basis gaveWayFor (weak: a basis
	// replaced since is not kept alive for it).
	waiting    atomic.Int32
	gaveWay    int
	gaveWayFor weak.Pointer[basis]
}

// defaultKeepDocuments is the most resources of a revision whose parsed documents the Loader
// keeps once it has loaded the revision as a basis (incremental.go). The documents spare a
// full load their parsing and checks (a type changed, a revision with problems): 0.4 s
// instead of 5 s at 200,000 resources. Past this size they are dropped: they cost about 200
// bytes a resource beside the Set's own (560 against 340 bytes a resource at 100,000), and
// a revision that changes files of resources alone loads from the basis without them; the
// resources of that full load then keep their own strings in shared blocks (leanResources).
const defaultKeepDocuments = 50_000

// NewLoader returns a Loader with empty caches.
func NewLoader() *Loader {
	return &Loader{files: map[string]*fileEntry{}, schemas: map[string]*compiledSchema{}, revisionBudget: celRevisionBudget,
		keepDocuments: defaultKeepDocuments, compactAfter: defaultCompactAfter}
}

// keepsDocuments reports whether the Loader keeps the parsed documents of a basis of
// resources resources (defaultKeepDocuments).
func (l *Loader) keepsDocuments(resources int) bool {
	return resources <= l.keepDocuments
}

// fileEntry is what one file content parses to, independent of its path.
type fileEntry struct {
	docs []document
	errs []ValidationError // the file's and its documents' structural problems; File is left empty
}

// resourcesOnly reports whether every document of the file is a resource (or an empty or
// broken one): no type or ResourceSet, whose problems and inputs need the file's data.
func (e *fileEntry) resourcesOnly() bool {
	for i := range e.docs {
		if e.docs[i].typ != nil || e.docs[i].set != nil {
			return false
		}
	}
	return true
}

// placed is a document at the path it has in the current load.
type placed struct {
	*source
	doc *document
}

// source is one file of the current load. Its documents share it, which keeps placed
// small: a load holds one per document of the repository.
type source struct {
	file string
	key  string // cache key of the file's content
	data []byte
	// origin is the file's ValidationError.Origin ("rendered by …" for a rendered file).
	origin string
}

func (p placed) at(line int, pth, msg string) ValidationError {
	return ValidationError{File: p.file, Line: p.line(line), Path: pth, Msg: msg, Origin: p.originOf(), set: p.setOf()}
}

// place puts a problem found in the file's data at the file.
func (s *source) place(ve ValidationError) ValidationError {
	ve.File, ve.Line, ve.Origin = s.file, s.line(ve.Line), s.origin
	return ve
}

// line is l, a line of the file's data, or 0 for a rendered file: its data is the
// renderer's output, whose lines are not those of the file Path names.
func (s *source) line(l int) int {
	if s.origin != "" {
		return 0
	}
	return l
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

	// What the rules (x-trueup-validations) of the revision have cost so far, shared by
	// the checks running in parallel, and whether some resource's rules were not
	// evaluated because it exceeded celRevisionBudget.
	celSpent   atomic.Uint64
	celSkipped atomic.Bool

	// lean: the revision's documents are dropped once loaded (no ResourceSet, past
	// keepDocuments, no transition rules), so its Set is built through the encoded form
	// (leanResources). dropped:
	// the files' data was given up (Options.DropData: as each file is parsed, earlyDrop, or
	// once the types are known, dropData) before the checks; needData:
	// a problem needed it since, for its line or its spec (rawDoc).
	// early: the data of files holding only resources is given up as each is parsed
	// (earlyDrop), before the load knows it is lean.
	lean, dropped, needData, early bool
	counted                        docCounts // the documents, once checked, for the basis

	inputsUsed map[string]*inputsEntry // becomes Loader.inputs
	celTotal   uint64                  // what the rules of every resource cost (resources)
	parts      partsMemo
	files      map[string]string // Set.Files
}

// Load parses every file and validates everything. On any problem it returns (nil, Errors)
// listing all problems found; the revision then must not be applied.
func (l *Loader) Load(files []sources.File, opts Options) (*Set, error) {
	l.lock()
	defer l.mu.Unlock()
	ld := &load{l: l, opts: opts, schemas: map[string]*compiledSchema{}}
	if opts.EncryptedUnknown != l.encryptedUnknown {
		// The cached checks were judged the other way.
		l.files, l.sets, l.encryptedUnknown, l.last = map[string]*fileEntry{}, nil, opts.EncryptedUnknown, nil
	}
	lim := opts.Limits.withDefaults()
	if len(files) > lim.MaxFiles {
		// Before any parsing: the cap is there to bound that work. The basis stays, as after
		// any other problem.
		return nil, Errors{overCap("files", len(files), lim.MaxFiles)}
	}
	basisKey := optionsKey(opts, l.revisionBudget)
	// Its own load: one that gives up leaves nothing (problems, rule costs) to the full load.
	if set, ok := (&load{l: l, opts: opts}).incremental(files, lim, basisKey); ok {
		return set, nil
	}
	for i := range files {
		if files[i].Unread {
			// Before anything changes: the caller loads again with every file read.
			return nil, ErrUnread
		}
	}
	// A full load that fails leaves the basis as it was: the basis holds what the next load
	// needs (a revision that fixes the problem loads from it), whatever this load puts in
	// the cache. One that succeeds makes its own. The documents a failed load parsed are
	// dropped past keepDocuments, as those of the basis are, but for one that needs the data
	// it gave up (ErrDataNeeded): its caller loads again at once, from them.
	prev, loaded, parsed := l.last, false, 0
	l.last = nil
	defer func() {
		if !loaded && prev != nil {
			l.last = prev
			if (!l.keepsDocuments(prev.resources) || !l.keepsDocuments(parsed)) && !ld.needData {
				l.files, l.sorted = map[string]*fileEntry{}, nil
			}
		}
	}()
	ld.early = opts.DropData && ld.earlyDrop(files)
	ld.dropped = ld.early
	docs := ld.parse(files)
	parsed = len(docs)
	runs, docs := ld.collectSets(files, docs)
	if ld.early && len(runs) > 0 {
		// Guessed wrong (earlyDrop): a ResourceSet's inputs may be in the data given up.
		// The documents stay cached for the load with the data.
		ld.needData = true
		return nil, ErrDataNeeded
	}
	if len(docs) > lim.MaxDocuments {
		return nil, Errors{overCap("documents", len(docs), lim.MaxDocuments)}
	}
	// Before anything is generated: the caps are there to bound that work.
	runs, planned := ld.planSets(runs, lim)
	written := countResources(docs)
	if written > lim.MaxResources || planned > lim.MaxResources-written {
		return nil, Errors{overResources(written, planned, lim.MaxResources)}
	}
	// A set whose inputs or plan failed is not among runs: its resources are missing, but
	// the revision is rejected anyway, and the other sets' problems are reported with its.
	docs = ld.expandSets(runs, docs)
	if opts.Parsed != nil {
		opts.Parsed(len(docs))
	}
	types, infos := ld.types(docs)
	// Resources of a type version with transition rules are checked from their documents.
	transitions := transitionRules(docs, infos)
	ld.lean = len(runs) == 0 && !l.keepsDocuments(written) && !transitions
	if ld.early && transitions {
		// Guessed wrong (earlyDrop): a transition check reads the data given up. The
		// documents stay cached for the load with the data. A revision that is not lean for
		// its size alone loads without the data given up: a problem that needs it asks for
		// it, as in a lean load.
		ld.needData = true
		return nil, ErrDataNeeded
	}
	if ld.lean && opts.DropData && len(ld.errs) == 0 {
		ld.dropData(docs, files)
	}
	// Past this call the documents are the cache's and the resources' (a lean load drops them).
	resources, packed, checks := ld.resources(docs, infos)
	l.schemas = ld.schemas
	if ld.needData {
		// A problem needed the files' data given up: the caller loads again with it (the
		// checks located without it are checked again then: checkStale).
		return nil, ErrDataNeeded
	}
	if len(ld.errs) > 0 {
		return nil, capSetProblems(sortErrors(ld.errs), runSpans(runs))
	}
	slices.SortFunc(types, func(a, b ResourceType) int { return cmp.Compare(a.Name, b.Name) })
	set := &Set{Types: types, Resources: resources, packed: packed, ResourceSets: setInfos(runs), transitions: checks, encryptedUnknown: opts.EncryptedUnknown}
	if len(set.ResourceSets) == 0 {
		set.Files = ld.files
	}
	// Past keepDocuments a basis comes only from a lean load (a ResourceSet or transition
	// rules make none), which has dropped the documents.
	l.last = newBasis(files, ld.counted, set, infos, ld.celTotal, basisKey, opts.Rewritten)
	loaded = true
	return set, nil
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
	ld.files = make(map[string]string, len(files))
	entries := make([]*fileEntry, len(files))
	used := make(map[string]*fileEntry, len(files))
	var todo []int
	for _, i := range order {
		if files[i].Refused != "" {
			ld.errs = append(ld.errs, refused(files[i]))
			continue
		}
		key := files[i].Hash
		if key == "" {
			key = "sha256:" + hashJSON(files[i].Data)
		}
		keys[i] = key
		// A path may come more than once (a base rendered by several kustomizations): its
		// entry changes when any of them does.
		if prev, ok := ld.files[files[i].Path]; ok {
			ld.files[files[i].Path] = prev + " " + key
		} else {
			ld.files[files[i].Path] = key
		}
		if e, ok := ld.l.files[key]; ok {
			used[key] = e
		} else if _, scheduled := used[key]; !scheduled {
			used[key] = nil
			todo = append(todo, i)
		}
	}

	parallel(len(todo), func(j int) {
		f := &files[todo[j]]
		e := parseFile(f.Data, f.RenderedBy != "")
		entries[todo[j]] = e
		if ld.early && !ld.opts.Rewritten[f.Path] && len(e.errs) == 0 && e.resourcesOnly() {
			f.Data, f.Unread = nil, true // see earlyDrop
		}
	})
	for _, i := range todo {
		used[keys[i]] = entries[i]
	}
	ld.l.files = used

	n := 0
	for _, e := range used {
		n += len(e.docs)
	}
	docs := make([]placed, 0, n)
	for _, i := range order {
		if files[i].Refused != "" {
			continue
		}
		f, e := files[i], used[keys[i]]
		src := &source{file: f.Path, key: keys[i], data: f.Data}
		if f.RenderedBy != "" {
			src.origin = "rendered by " + f.RenderedBy
		}
		for _, ve := range e.errs {
			ld.errs = append(ld.errs, src.place(ve))
		}
		for j := range e.docs {
			docs = append(docs, placed{source: src, doc: &e.docs[j]})
		}
	}
	return docs
}

// parseFile decodes one file content, a document at a time: each document's YAML nodes
// are dropped once it is decoded. Its documents are allocated as one block, sized by
// counting the document separators, and the resource parts of them as one block for each
// namespace (homeResources): a file of many small resources would otherwise pay the
// allocator's overhead per document, for as long as the cache holds it. A renderer's output
// (rendered) is read by eachRenderedDocument.
func parseFile(data []byte, rendered bool) *fileEntry {
	n := bytes.Count(data, []byte("\n---")) + 1
	e := &fileEntry{docs: make([]document, 0, n)}
	// The resources are decoded into a scratch slice, which may move as it grows: the
	// documents point into it only until homeResources copies them to their blocks.
	scratch := resourceScratch.Get().(*[]resourceDoc)
	res := (*scratch)[:0]
	sets := metaSets{}
	each := eachTransientDocument
	if rendered {
		each = eachRenderedDocument
	}
	errs := each(data, func(rd rawDoc) {
		res = append(res, resourceDoc{})
		doc, derrs := decodeDocument(rd, &res[len(res)-1], sets)
		if doc.res == nil {
			res = res[:len(res)-1]
		}
		e.docs = append(e.docs, doc)
		e.errs = append(e.errs, derrs...)
	})
	e.errs = append(e.errs, errs...)
	homeResources(e.docs, res)
	clear(res)
	*scratch = res[:0]
	resourceScratch.Put(scratch)
	return e
}

// resourceScratch holds the slices parseFile decodes a file's resources into.
var resourceScratch = sync.Pool{New: func() any { return new([]resourceDoc) }}

// homeResources copies res, the resources of docs in their order, into a block for each
// namespace, sized to fit, and points docs at them. A lean load lets each resource's document
// go once the resource is encoded (leanResources), and encodes by namespace first: a block
// of a namespace's resources is garbage once that namespace is encoded, where a block of the
// file's would live until its last namespace (a file spanning twenty namespaces kept every
// document of a million until the last chunk).
func homeResources(docs []document, res []resourceDoc) {
	if len(res) == 0 {
		return
	}
	var counts map[sym]int
	for i := range res {
		if res[i].namespace != res[0].namespace && counts == nil {
			counts = map[sym]int{}
			for j := range res {
				counts[res[j].namespace]++
			}
			break
		}
	}
	blocks := map[sym][]resourceDoc{}
	if counts == nil {
		blocks[res[0].namespace] = make([]resourceDoc, 0, len(res))
	}
	for ns, n := range counts {
		blocks[ns] = make([]resourceDoc, 0, n)
	}
	k := 0
	for i := range docs {
		if docs[i].res == nil {
			continue
		}
		r := &res[k]
		k++
		b := append(blocks[r.namespace], *r) // within its capacity: the block never moves
		blocks[r.namespace] = b
		docs[i].res = &b[len(b)-1]
	}
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
	if p.data == nil && ld.dropped {
		ld.needData = true // given up (dropData): the caller loads again with it
		return rawDoc{}, false
	}
	if ld.memoKey != p.key || ld.memo == nil {
		ld.memo, _ = parseStream(p.data)
		ld.memoKey = p.key
	}
	for _, rd := range ld.memo {
		if rd.index == int(p.doc.index) {
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
	declared := map[string][]*placed{}
	fromFiles := map[string]bool{}
	for i := range docs {
		p := &docs[i]
		t := p.doc.typ
		if t == nil {
			continue
		}
		ti := &typeInfo{name: t.name, group: t.group, schemas: map[string]*compiledSchema{}, broken: t.broken}
		rt := ResourceType{
			Name:           t.name,
			Group:          t.group,
			Description:    t.description,
			Action:         ActionRef{Name: t.action.Name, With: bytes.Clone(t.action.With)},
			ResyncInterval: cloneDuration(t.resync),
			Drift:          cloneDrift(t.drift),
			Spec:           bytes.Clone(t.spec),
			Hash:           t.hash,
			File:           p.file,
			Line:           p.line(int(p.doc.line)),
		}
		for _, v := range t.versions {
			cs := ld.schema(v.schemaHash, v.schema)
			if cs.schema == nil {
				ld.compileError(*p, v, cs)
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
				at, shown, msg := actionProblem(err)
				ld.errs = append(ld.errs, p.at(ld.lineOf(*p, at), shown, msg))
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
				ld.errs = append(ld.errs, p.at(int(p.doc.line), "", fmt.Sprintf("duplicate ResourceType %s (also declared at %s)", name, others)))
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
	line, where := int(p.doc.line), ""
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
// parameters, at spec.action.with or the field of with it names: shown is the path the
// error names, at the one whose line it gets. A "with: ref ... " message of an action's
// ValidateWith gets the line of ref when with: holds it.
func actionProblem(err error) (at path, shown, msg string) {
	msg = err.Error()
	with := path{"spec", "action", "with"}
	if rest, ok := strings.CutPrefix(msg, "with: "); ok {
		word, _, _ := strings.Cut(rest, " ")
		return with.key(strings.Trim(word, `"':,`)), "spec.action.with", rest
	}
	if rest, ok := strings.CutPrefix(msg, "with."); ok {
		if field, m, ok := strings.Cut(rest, ": "); ok {
			if fp, ok := parsePath(field); ok {
				return append(with, fp...), "spec.action.with." + field, m
			}
		}
	}
	if aboutWith.MatchString(msg) {
		return with, "spec.action.with", msg
	}
	return path{"spec", "action"}, "spec.action", msg
}

// parsePath reads a path as path.String spells it (inputs[1], variables["app.io/x"]); ok
// is false when s is not one.
func parsePath(s string) (p path, ok bool) {
	for s != "" {
		switch {
		case strings.HasPrefix(s, `["`):
			q, err := strconv.QuotedPrefix(s[1:])
			if err != nil || !strings.HasPrefix(s[1+len(q):], "]") {
				return nil, false
			}
			k, _ := strconv.Unquote(q)
			p, s = p.key(k), s[len(q)+2:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, false
			}
			i, err := strconv.Atoi(s[1:end])
			if err != nil || i < 0 {
				return nil, false
			}
			p, s = p.index(i), s[end+1:]
		default:
			end := strings.IndexAny(s, ".[")
			if end < 0 {
				end = len(s)
			}
			if !simpleKey.MatchString(s[:end]) {
				return nil, false
			}
			p, s = p.key(s[:end]), s[end:]
		}
		if rest, ok := strings.CutPrefix(s, "."); ok {
			if rest == "" || rest[0] == '[' {
				return nil, false
			}
			s = rest
		}
	}
	return p, len(p) > 0
}

// lineOf is the line of pth in p's document: the line of its deepest key written there, so
// a with: problem points at the with: line (or its field's) rather than at the document's
// first line, which it gives when the file cannot be read again.
func (ld *load) lineOf(p placed, pth path) int {
	rd, ok := ld.rawDoc(p)
	if !ok {
		return int(p.doc.line)
	}
	return lineOf(rd.root, p.docPath(pth))
}

// elsewhere lists the places of ps other than p, as file:line.
func elsewhere(p *placed, ps []*placed) string {
	var s []string
	for _, o := range ps {
		if o.file != p.file || o.doc != p.doc {
			s = append(s, ValidationError{File: o.file, Line: o.line(int(o.doc.line)), Origin: o.originOf()}.place())
		}
	}
	return strings.Join(s, ", ")
}

type identity struct {
	namespace, kind sym
	name            string
}

// resourceAt is a resource document at its place in the current load, with the schema it
// is checked against.
type resourceAt struct {
	p        *placed
	cs       *compiledSchema
	metaHash string // set once the load is known to succeed
}

// resources checks every resource against its type and returns them, or nil when the load
// has problems: a Set would be thrown away.
func (ld *load) resources(docs []placed, infos map[string]*typeInfo) ([]Resource, *compactResources, []transitionCheck) {
	items, stale := ld.match(docs, infos)
	// Resources checked in an earlier load count at what their rules cost then.
	for _, it := range items {
		if r := it.p.doc.res; r.checkedWith == it.cs.id {
			ld.celSpent.Add(uint64(r.celCost))
		}
	}
	ld.checkStale(items, stale)
	var celTotal uint64
	defer func() { ld.celTotal = celTotal }()
	for _, it := range items {
		celTotal += uint64(it.p.doc.res.celCost)
		for _, ve := range it.p.doc.res.problems() {
			// A generated document's problems carry their input (locate): keep it.
			origin := ve.Origin
			ve = it.p.place(ve)
			if it.p.doc.gen != nil {
				ve.Origin = origin
			}
			ld.errs = append(ld.errs, ve)
		}
	}
	// Judged on the total of every resource, whichever were checked in this load: a
	// revision over the budget is refused whether loaded afresh or on top of another.
	if ld.celSkipped.Load() || celTotal > ld.l.revisionBudget {
		ld.errs = append(ld.errs, revisionTooExpensive(ld.l.revisionBudget))
	}
	// A check that needed the data given up (ErrDataNeeded): no Set is built, and the documents
	// stay cached for the load that follows at once with the data (see Load).
	if len(ld.errs) > 0 || ld.needData {
		return nil, nil, nil
	}
	ld.counted = countDocs(docs)
	var resources []Resource
	var packed *compactResources
	var transitions []transitionCheck
	if ld.lean {
		docs = nil
		resources, packed = ld.leanResources(items)
		items = nil
	} else {
		resources, transitions = ld.setResources(items)
	}
	// A packed Set's resources are read a chunk at a time, and only when one may have a
	// dependency.
	each, n := iterResources(resources), len(resources)
	if packed != nil {
		each, n = packed.each, packed.n
	}
	deps := packed == nil || packed.deps()
	if ld.opts.CheckReference != nil && deps {
		for r := range each {
			ld.checkReference(r)
		}
		if len(ld.errs) > 0 {
			return nil, nil, nil
		}
	}
	// Last: a cycle is a problem of the revision as a whole, and only a set otherwise
	// valid has every dependency known.
	if !deps {
		return resources, packed, transitions
	}
	if errs := CycleErrors(graphNodesOf(n, each)); errs != nil {
		ld.errs = append(ld.errs, errs...)
		return nil, nil, nil
	}
	return resources, packed, transitions
}

// iterResources yields a pointer to each of resources, in order.
func iterResources(resources []Resource) iter.Seq[*Resource] {
	return func(yield func(*Resource) bool) {
		for i := range resources {
			if !yield(&resources[i]) {
				return
			}
		}
	}
}

// match finds each resource's schema and reports the problems that need the whole
// revision: unknown kinds, unserved versions, duplicates. It returns the resources to
// check, in file order, and which of them (indices in items) need checking again.
func (ld *load) match(docs []placed, infos map[string]*typeInfo) (items []resourceAt, stale []int) {
	items = make([]resourceAt, 0, len(docs))
	// Two places share a document only when their files have the same content: the
	// documents of those are checked once each (queued).
	shared := sharedKeys(docs)
	queued := map[*resourceDoc]bool{}
	// The first place of each identity, by the identity's hash: a map keyed by identities
	// would hold about 60 bytes a resource at its peak, one of the first sync's largest
	// (collide holds the identities whose hash another identity has). The places of those
	// declared more than once.
	first := make(map[uint64]int32, len(docs))
	var collide map[identity]int32
	dups := map[identity][]*placed{}
	dup := func(id identity, f, p *placed) {
		if dups[id] == nil {
			dups[id] = []*placed{f, p}
		} else {
			dups[id] = append(dups[id], p)
		}
	}
	seed := maphash.MakeSeed()
	// The message of each unknown kind, with the known kind it likely meant: a revision
	// may hold many resources of one mistyped kind.
	var unknown map[string]string
	for i := range docs {
		p := &docs[i]
		r := p.doc.res
		if r == nil {
			continue
		}
		if r.name != "" {
			id := identity{r.namespace, p.doc.kind, r.name}
			h := identityHash(seed, id)
			if j, seen := first[h]; !seen {
				first[h] = int32(i)
			} else if f := &docs[j]; f.doc.res.namespace == id.namespace && f.doc.kind == id.kind && f.doc.res.name == id.name {
				dup(id, f, p)
			} else if j, seen := collide[id]; seen {
				dup(id, &docs[j], p)
			} else {
				if collide == nil {
					collide = map[identity]int32{}
				}
				collide[id] = int32(i)
			}
		}
		kind := p.doc.kind.String()
		ti := infos[kind]
		if ti == nil {
			if unknown == nil {
				unknown = map[string]string{}
			}
			group, _, _ := groupVersion(p.doc.apiVersion.String())
			msg, ok := unknown[kind+" "+group]
			if !ok {
				msg = unknownKind(kind, group, infos)
				unknown[kind+" "+group] = msg
			}
			ld.errs = append(ld.errs, p.at(int(p.doc.kindLine), "kind", msg))
			continue
		}
		apiVersion := p.doc.apiVersion.String()
		group, version, ok := groupVersion(apiVersion)
		if !ok || r.specBad {
			continue // already reported, and nothing to check further
		}
		cs, ok := ti.schemas[version]
		if group != ti.group || !ok {
			if !ti.broken && (group != ti.group || !slices.Contains(ti.versions, version)) {
				ld.errs = append(ld.errs, p.at(int(p.doc.apiVersionLine), "apiVersion", notServed(apiVersion, ti)))
			}
			continue
		}
		items = append(items, resourceAt{p: p, cs: cs})
		// A Set's Spec shares the cached bytes, and a Set's user must replace it, never
		// write into it; one that did anyway has made the check stale: checked again, the
		// resource gets new bytes rather than the written ones.
		if r.checkedWith == cs.id && !r.specIntact() {
			r.checkedWith = sym{}
		}
		// A check against another schema, or none, is stale. The same content under
		// two paths shares one document: check it once.
		if r.checkedWith != cs.id && (p.doc.gen != nil || !shared[p.key] || !queued[r]) {
			if p.doc.gen == nil && shared[p.key] { // a generated document has no second place
				queued[r] = true
			}
			stale = append(stale, len(items)-1)
		}
	}
	for id, ps := range dups {
		for _, p := range ps {
			msg := fmt.Sprintf("duplicate resource %s/%s/%s (also declared at %s)", id.namespace, id.kind, id.name, elsewhere(p, ps))
			ld.errs = append(ld.errs, p.at(int(p.doc.line), "", msg))
		}
	}
	return items, stale
}

// identityHash is the hash match keys identities by; tests make every identity collide.
var identityHash = maphash.Comparable[identity]

// sharedKeys are the content keys of docs' files that more than one place has (two paths, or
// a path rendered twice): the only files whose documents two places share. A file's
// documents are consecutive in docs.
func sharedKeys(docs []placed) map[string]bool {
	var shared map[string]bool
	seen := map[string]*source{}
	var last *source
	for i := range docs {
		s := docs[i].source
		if s == last {
			continue
		}
		last = s
		if other, ok := seen[s.key]; ok && other != s {
			if shared == nil {
				shared = map[string]bool{}
			}
			shared[s.key] = true
		}
		seen[s.key] = s
	}
	return shared
}

// unknownKind says that no type declares kind, and which known kinds it likely meant:
// those of the resource's group first, since a kind of another group fails again on its
// group; another group's kind is named with its group.
func unknownKind(kind, group string, infos map[string]*typeInfo) string {
	var same, all []string
	for name, ti := range infos {
		all = append(all, name)
		if ti.group == group {
			same = append(same, name)
		}
	}
	s := suggest(kind, same)
	if len(s) == 0 {
		s = suggest(kind, all)
	}
	if len(s) == 0 || kind == "" {
		return fmt.Sprintf("unknown kind %s (no ResourceType declares it)", kind)
	}
	for i, name := range s {
		if g := infos[name].group; g != group {
			s[i] = fmt.Sprintf("%s of group %s", name, g)
		}
	}
	return fmt.Sprintf("unknown kind %s (no ResourceType declares it; did you mean %s?)", kind, strings.Join(s, " or "))
}

// setResources turns checked resources into the Set's, sorted by namespace, kind and name.
// The Set shares the cache's immutable strings and gets its own copies of the rest, which
// the next load may share (see Loader). Its resources share label and annotation maps (see
// Resource).
func (ld *load) setResources(items []resourceAt) ([]Resource, []transitionCheck) {
	metaHashes(items)
	order := sortedOrder(items, ld.l.sorted)
	sorted := make([]resourceAt, len(items))
	ld.l.sorted = make([]*resourceDoc, len(items))
	for j, i := range order {
		sorted[j] = items[i]
		ld.l.sorted[j] = items[i].p.doc.res
	}
	return buildResources(sorted, ld.opts.ReuseSet)
}

// leanResources makes the Set's resources of items as setResources does, for a revision
// whose documents the Loader drops once loaded (past keepDocuments): each chunk of resources
// is built and encoded at once (compactResources), its documents give up what each holds
// alone (resourceDoc.encoded), the documents and the cache are dropped, and the Set is
// decoded from the encoded form. A first sync of a million resources would
// otherwise hold the files' data (which Options.DropData gives up before the checks), the
// documents and the Set whole at once (about 720 MB live). The caller holds no document past
// this call.
//
// The Set is the basis of incremental loads: what each resource holds alone (its name, spec
// and spec hash) is in blocks shared by packChunk resources, because the Go collector marks
// every object of that Set on every cycle, and three small objects a resource were half its
// work there (a forced collection with 200,000 kept resources: 35 ms, 18 ms in blocks). A
// packed Spec's capacity is its length, as a Resource's is (an append copies), and nothing
// writes into a Set's specs (see Resource).
//
// With Options.Packed (and no Rewritten file) the encoded form is the Set's: nothing is
// decoded, and packed is returned instead of the resources.
func (ld *load) leanResources(items []resourceAt) (resources []Resource, packed *compactResources) {
	metaHashes(items)
	// Sorted in place: a copy would add 32 bytes a resource at the load's peak.
	sorted := items
	permute(sorted, sortedOrder(items, ld.l.sorted))
	items = nil
	ld.l.files, ld.l.sorted, ld.memo, ld.memoKey = map[string]*fileEntry{}, nil, nil, ""
	ld.parts.m = nil // what the checks learnt: a value of each spec's properties
	ld.l.leans++
	decoded := labelMaps(sorted)
	// The resources of a file the caller rewrites (Options.Rewritten) are neither encoded nor
	// decoded into shared blocks: their caller replaces their specs once loaded (sealed:
	// decrypted values by markers), and a block would keep what it replaced for as long as
	// the block lives. They are built aside and put in their places once decoded (an empty
	// resource holds each place meanwhile).
	aside := map[int]Resource{}
	if len(ld.opts.Rewritten) > 0 {
		for j, it := range sorted {
			if ld.opts.Rewritten[it.p.file] {
				r := buildResource(it, decoded)
				r.SpecHash = it.p.doc.res.hash()
				aside[j] = r
			}
		}
	}
	c := newCompact(len(sorted))
	parallel(len(c.chunks), func(k int) {
		lo, hi := c.part(k)
		part := sorted[lo:hi]
		rs := make([]Resource, len(part))
		// The specs' hashes, which the check left to the encoding (check), spelled into one
		// scratch block that the encoding reads back as bytes.
		hexes := encodeBuffers.Get().(*[]byte)
		h := slices.Grow((*hexes)[:0], 2*sha256.Size*len(part))
		for i := range part {
			if _, ok := aside[lo+i]; !ok {
				rs[i] = buildResource(part[i], decoded)
				if rs[i].SpecHash == "" {
					sum, at := sha256.Sum256(rs[i].Spec), len(h)
					h = hex.AppendEncode(h, sum[:])
					rs[i].SpecHash = unsafe.String(&h[at], len(h)-at)
				}
			}
		}
		if !c.chunks[k].encode(rs) {
			panic("manifest: a generated resource in a lean load") // a revision of ResourceSets is never lean
		}
		clear(rs) // nothing holds the scratch block's strings once it is back in the pool
		*hexes = h[:0]
		encodeBuffers.Put(hexes)
		for i := range part {
			// The document gives up its resource, whose block goes with its namespace's last
			// (homeResources), and meanwhile what the resource holds alone.
			part[i].p.doc.res.encoded()
			part[i].p.doc.res = nil
		}
	})
	sorted = nil
	if ld.opts.Packed && len(ld.opts.Rewritten) == 0 {
		return nil, c
	}
	out := c.resources(ld.opts.ReuseSet)
	for j, r := range aside {
		out[j] = r
	}
	return out, nil
}

// earlyDrop reports whether a load with Options.DropData gives each file's data up as soon as
// the file is parsed, when the file holds nothing but resources and parsed without problems
// (a type's file keeps its data for the lines of its problems): when the revision is likely
// lean, with more documents than the Loader keeps (counted by their separators, a pass over
// the data), no ResourceSet and no transition rule (no file or known type names oldSelf). A
// first sync of a million resources would otherwise hold every file's data (about 140 MB)
// beside every document parsed. A guess that proves wrong costs the caller a load with the
// data (ErrDataNeeded) when a ResourceSet or a transition rule after all needs it; a revision
// with fewer resources than counted loads without it (a problem that needs it asks for it).
func (ld *load) earlyDrop(files []sources.File) bool {
	old := []byte("oldSelf")
	for _, kt := range ld.opts.KnownTypes {
		if bytes.Contains(kt.Spec, old) {
			return false
		}
	}
	docs := 0
	for i := range files {
		if docs <= ld.l.keepDocuments {
			docs += bytes.Count(files[i].Data, []byte("\n---")) + 1
		}
		if bytes.Contains(files[i].Data, []byte(setKind)) || bytes.Contains(files[i].Data, old) {
			return false
		}
	}
	return docs > ld.l.keepDocuments
}

// permute puts items in order: the item at order[j] goes to j. order is spent (each entry
// becomes -1).
func permute[T any](items []T, order []int) {
	for j := range order {
		if order[j] < 0 {
			continue
		}
		held, k := items[j], j
		for {
			i := order[k]
			order[k] = -1
			if i == j {
				items[k] = held
				break
			}
			items[k], k = items[i], i
		}
	}
}

// dropData sets the data of files and of docs' sources to nil (but the caller's rewritten
// files'), for a lean load with Options.DropData once the types are known: the documents are
// parsed, and past this only a schema problem needs a file's data again (for its line), as
// does a check of a cached document whose spec the cache dropped (spec): Load then answers
// ErrDataNeeded. Resources of a type version with transition rules keep the data (Load does not
// call this, and a load that gave files up as they were parsed answers ErrDataNeeded): they
// are checked against their last spec from their documents (transitionCheck).
func (ld *load) dropData(docs []placed, files []sources.File) {
	for _, p := range docs {
		if !ld.opts.Rewritten[p.file] {
			p.data = nil
		}
	}
	for i := range files {
		if !ld.opts.Rewritten[files[i].Path] {
			// Unread: the Loader holds what it parsed of the file; a caller that passed the
			// file again would get ErrUnread, not the parse of no data under its hash.
			files[i].Data, files[i].Unread = nil, true
		}
	}
	ld.memo, ld.memoKey, ld.dropped = nil, "", true
}

// transitionRules reports whether a resource of docs is of a type version with transition
// rules (a type of infos that no resource uses does not count).
func transitionRules(docs []placed, infos map[string]*typeInfo) bool {
	seen := map[[2]sym]bool{}
	for _, p := range docs {
		key := [2]sym{p.doc.kind, p.doc.apiVersion}
		if p.doc.res == nil || seen[key] {
			continue
		}
		seen[key] = true
		ti := infos[p.doc.kind.String()]
		if ti == nil {
			continue
		}
		if _, version, ok := groupVersion(p.doc.apiVersion.String()); ok {
			if cs := ti.schemas[version]; cs != nil && cs.rules != nil && cs.rules.transition {
				return true
			}
		}
	}
	return false
}

// transition reports whether the resource's schema has transition rules (checked against
// the last applied spec, from the resource's document).
func (it resourceAt) transition() bool { return it.cs.rules != nil && it.cs.rules.transition }

// metaHashes sets the items' metaHash; items must be in file order, which the hasher's memo
// needs.
func metaHashes(items []resourceAt) {
	var meta metaHasher
	for i := range items {
		p, r := items[i].p, items[i].p.doc.res
		items[i].metaHash = meta.hash(p.file, metaKey{p.doc.apiVersion, r.meta, r.deps.metaKey()})
	}
}

// buildResources makes the Set's resources of items (metaHash set), in their order, and the
// transition checks of those whose schema has transition rules.
func buildResources(items []resourceAt, room bool) ([]Resource, []transitionCheck) {
	decoded := labelMaps(items)
	var transitions []transitionCheck
	for i, it := range items {
		if r := it.p.doc.res; r.specHash == "" {
			// Checked by a lean load that gave up, its documents cached (check): hashed
			// before a Set shares the spec, so that specIntact can tell a write into it.
			r.specHash = hashJSON(r.specJSON)
		}
		if it.transition() {
			p := it.p
			transitions = append(transitions, transitionCheck{i: i, schemaHash: it.cs.hash, schema: it.cs.raw,
				file: p.file, data: p.data, docIndex: int(p.doc.index), gen: p.doc.gen, origin: p.origin})
		}
	}
	// Each Resource is built on its own (decoded is only read): in parallel, since a
	// ResourceSet makes Sets of 100,000.
	out := make([]Resource, len(items), resourcesCap(len(items), room))
	const batch = 4096
	parallel((len(items)+batch-1)/batch, func(b int) {
		for i := b * batch; i < min(len(items), (b+1)*batch); i++ {
			out[i] = buildResource(items[i], decoded)
		}
	})
	return out, transitions
}

// labelMaps decodes the label and annotation sets of items, one map per distinct set: a
// repository repeats a few label sets across thousands of resources, and a map per resource
// was a third of a large Set.
func labelMaps(items []resourceAt) map[string]map[string]string {
	decoded := map[string]map[string]string{}
	for _, it := range items {
		labels, annotations := it.p.doc.res.meta.sets()
		for _, s := range [2]string{labels, annotations} {
			if _, ok := decoded[s]; !ok {
				decoded[s] = decodeStrings(s)
			}
		}
	}
	return decoded
}

// buildResource makes the Set's resource of it (metaHash set), with its label and annotation
// maps from decoded (labelMaps).
func buildResource(it resourceAt, decoded map[string]map[string]string) Resource {
	p, r := it.p, it.p.doc.res
	labels, annotations := r.meta.sets()
	return Resource{
		APIVersion:  p.doc.apiVersion.String(),
		Kind:        p.doc.kind.String(),
		Namespace:   r.namespace.String(),
		Name:        r.name,
		Labels:      decoded[labels],
		Annotations: decoded[annotations],
		Spec:        r.specJSON,
		SpecHash:    r.specHash, // empty in a lean load's encoding (check), which hashes then
		MetaHash:    it.metaHash,
		DependsOn:   r.deps.dependencies(),
		File:        p.file,
		Line:        p.line(int(p.doc.line)),
		gen:         p.doc.gen,
		fileOrigin:  p.origin,
	}
}

// checkReferences asks Options.CheckReference about every dependency across namespaces.
func (ld *load) checkReferences(resources []Resource) {
	for i := range resources {
		ld.checkReference(&resources[i])
	}
}

// checkReference asks Options.CheckReference about r's dependencies across namespaces.
func (ld *load) checkReference(r *Resource) {
	for _, d := range r.DependsOn {
		if d.Target.Namespace == r.Namespace {
			continue
		}
		if err := ld.opts.CheckReference(r.Namespace, d.Target, d.Outputs); err != nil {
			pth := "spec"
			if len(d.Outputs) == 0 {
				pth = "dependsOn"
			}
			ld.errs = append(ld.errs, ValidationError{File: r.File, Line: r.Line, Path: pth, Msg: err.Error(), Origin: r.origin(), set: r.gen.setOf()})
		}
	}
}

func notServed(apiVersion string, ti *typeInfo) string {
	avail := make([]string, len(ti.versions))
	for i, v := range ti.versions {
		avail[i] = ti.group + "/" + v
	}
	return fmt.Sprintf("apiVersion %s is not served by ResourceType %s (available: %s)", apiVersion, ti.name, strings.Join(avail, ", "))
}

// checkBatch is how many resources are checked at a time. A first sync checks every
// resource, and what each check holds until its problems are located would add up.
const checkBatch = 1024

// checkStale validates items[stale] and records the outcome in their documents.
func (ld *load) checkStale(items []resourceAt, stale []int) {
	type job struct {
		resourceAt
		spec     any  // nil: decode the spec from the document
		skip     bool // the spec could not be found again; already reported
		problems []schemaProblem
	}
	jobs := make([]job, 0, min(len(stale), checkBatch))
	for len(stale) > 0 {
		n := min(len(stale), checkBatch)
		jobs = jobs[:0]
		// Specs dropped after an earlier check come from their files again: in file
		// order, one file at a time.
		for _, i := range stale[:n] {
			j := job{resourceAt: items[i]}
			if r := j.p.doc.res; r.hasSpec && r.written == "" {
				if g := j.p.doc.gen; g != nil {
					// Rendered again rather than read: the set's file holds its template.
					b, _ := g.t.spec.appendJSON(nil, g.in)
					r.written = string(b)
				} else {
					j.spec = ld.spec(*j.p)
					j.skip = j.spec == nil
				}
			}
			jobs = append(jobs, j)
		}
		stale = stale[n:]
		// Validation dominates a first sync; each document is independent and compiled
		// schemas are read-only, so spread it over the CPUs.
		parallel(len(jobs), func(i int) {
			j := &jobs[i]
			if g := j.p.doc.gen; g != nil && j.p.doc.res.hasSpec {
				// Built from the template rather than decoded from written, which
				// costs more; written stays the canonical form.
				j.spec, _ = g.t.spec.value(g.in)
			}
			if !j.skip {
				j.problems = check(j.p.doc.res, j.p.doc.kind, j.spec, j.cs, ld, j.p.doc.gen != nil)
			}
		})
		// Locating problems may parse files again: in file order too.
		for _, j := range jobs {
			j.p.doc.res.setProblems(ld.locate(*j.p, j.problems))
			if len(j.problems) > 0 && j.p.data == nil && ld.dropped {
				// Located without the data given up (dropData): not a check to keep.
				j.p.doc.res.checkedWith = sym{}
			}
		}
	}
}

// spec returns the spec of p's resource as written, parsing its file again because the
// cache has dropped it; nil, reported, when the file no longer holds it, and nil when the
// load gave the file's data up (dropData: Load answers ErrDataNeeded).
func (ld *load) spec(p placed) any {
	if p.data == nil && ld.dropped {
		ld.needData = true // given up (dropData): Load answers ErrDataNeeded
		return nil
	}
	if rd, ok := ld.rawDoc(p); ok {
		if spec, ok := rd.value.(map[string]any)["spec"].(map[string]any); ok {
			return spec
		}
	}
	// Only a source that hands out different data under one hash gets here.
	ld.errs = append(ld.errs, p.at(int(p.doc.line), "", "file content differs from what its hash stood for in the previous load"))
	return nil
}

// check applies cs's defaults to r's spec, validates it and records the stored form in r,
// where it stays valid for as long as the schema does, with the dependencies its output
// references imply. kind is r's. spec is the spec as written, or nil to take it from r. It
// returns the problems found, which still need lines. ld counts what the rules cost
// (celRevisionBudget); nil, no budget for the revision.
func check(r *resourceDoc, kind sym, spec any, cs *compiledSchema, ld *load, byParts bool) []schemaProblem {
	var canon string // the stored form, when it is known before applying defaults
	owned := false   // spec is decoded here: defaults may be filled in place
	switch {
	case spec != nil:
		// A generated spec comes with its canonical form (written is empty otherwise).
		canon = r.written
	case !r.hasSpec:
		spec, owned = map[string]any{}, true
	default:
		var ok bool
		owned = true
		if spec, ok = decodeCanonical(r.written); !ok {
			dec := json.NewDecoder(strings.NewReader(r.written))
			dec.UseNumber()
			if err := dec.Decode(&spec); err != nil {
				// written was encoded by marshalCanonical: it always decodes.
				return []schemaProblem{{path: path{"spec"}, msg: "cannot decode: " + err.Error()}}
			}
		}
		// Encoding the decoded value again would give written back.
		canon = r.written
	}
	v, changed := cs.defaults.fill(spec, owned)
	markers := ld != nil && ld.opts.EncryptedUnknown
	var problems []schemaProblem
	// The specs of a ResourceSet share most values: their parts are validated once each.
	if !byParts || ld == nil || !ld.parts.valid(cs, v) {
		problems = cs.validateMarkers(v, path{"spec"}, markers)
	}
	refs := usesSecretRef(v, 0)
	if refs {
		problems = append(problems, secretRefProblems(v, specRoot)...)
		problems = append(problems, refPlacementProblems(cs.doc, v, specRoot)...)
	}
	implied, refProblems := outputRefs(v, graph.ID{Kind: kind.String(), Namespace: r.namespace.String(), Name: r.name}, specRoot)
	r.setImplied(implied)
	// A rule reading a place that holds an output reference is skipped, as one reading a
	// secret reference is: its value is known only once the dependency has outputs.
	refs = refs || len(implied) > 0 || len(refProblems) > 0 || (markers && usesMarker(v, 0))
	checked := cs.id
	r.celCost = 0
	if len(problems) == 0 && cs.rules != nil && cs.rules.plain {
		if ld != nil && ld.celSpent.Load() > ld.l.revisionBudget {
			// Reported once, for the revision; checked again by the next load.
			ld.celSkipped.Store(true)
			checked = sym{}
		} else {
			var cost uint64
			problems, cost = cs.rules.evalRules(v, nil, false, specRoot, false, refs, markers)
			r.celCost = uint32(min(cost, math.MaxUint32))
			if ld != nil {
				ld.celSpent.Add(cost)
			}
		}
	}
	problems = append(problems, refProblems...)
	// Kept as long as the document, and shared with the Sets: no spare capacity, so that a
	// Set's reader that appends to a Spec gets a copy.
	var stored json.RawMessage
	if changed || canon == "" {
		b, err := marshalCanonical(v)
		if err != nil {
			problems = append(problems, schemaProblem{path: path{"spec"}, msg: "cannot encode as JSON: " + err.Error()})
		}
		stored = append(make(json.RawMessage, 0, len(b)), b...)
	} else {
		stored = append(make(json.RawMessage, 0, len(canon)), canon...)
	}
	r.written = ""
	r.specJSON, r.specHash, r.checkedWith = stored, "", checked
	if ld == nil || !ld.lean {
		// A lean load's documents go once encoded, which hashes each spec then (hash): its
		// hash would only add 80 bytes a resource to what the load holds until then.
		r.specHash = hashJSON(stored)
	}
	return problems
}

// revisionTooExpensive is the one error of a revision whose rules exceed the budget.
func revisionTooExpensive(budget uint64) ValidationError {
	return ValidationError{Msg: fmt.Sprintf("the rules (%s) of this revision are too expensive to evaluate: all resources together cost more than the budget of %d for one revision, and rules past it are not evaluated; fewer or cheaper rules are needed (a comprehension costs per element)", validationsKey, budget)}
}

// specRoot is where a spec's problems are, shared: paths are extended by copying (path.key).
var specRoot = path{"spec"}

// locate turns problems in p's spec into ValidationErrors at the lines of the YAML nodes
// they concern, or at the nearest node that exists (a default has no line).
func (ld *load) locate(p placed, problems []schemaProblem) []ValidationError {
	if len(problems) == 0 {
		return nil
	}
	rd, ok := ld.rawDoc(p)
	out := make([]ValidationError, 0, len(problems))
	origin, set := p.originOf(), p.setOf()
	for _, pr := range problems {
		line := int(p.doc.line)
		if ok {
			at := pr.path
			if pr.at != nil {
				at = pr.at
			}
			line = lineOf(rd.root, p.docPath(at))
		}
		out = append(out, ValidationError{Line: line, Path: pr.path.String(), Msg: pr.msg, Origin: origin, set: set})
	}
	return out
}

// parallel calls fn(0..n-1) on up to GOMAXPROCS goroutines and waits for them.
func parallel(n int, fn func(i int)) { parallelOn(runtime.GOMAXPROCS(0), n, fn) }

// parallelOn is parallel on at most workers goroutines.
func parallelOn(workers, n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
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

func cloneDuration(d *time.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	c := *d
	return &c
}

func cloneDrift(p *DriftPolicy) *DriftPolicy {
	if p == nil {
		return nil
	}
	return &DriftPolicy{Mode: p.Mode, Ignore: slices.Clone(p.Ignore)}
}

// ErrUnread is Load's error for a revision with files whose data the source left out
// (sources.File.Unread) that it cannot load from its last Set: the caller fetches every
// file's data and loads again, with Options.DropData still (a type changed on a large
// source: that load parses every file, and needs their data no longer than a first sync).
var ErrUnread = errors.New("the revision must be loaded with every file read")

// ErrDataNeeded is the ErrUnread of a load that gave the files' data up (Options.DropData)
// and found a problem that needs it (a schema problem's line): the caller fetches every
// file's data and loads again without DropData.
var ErrDataNeeded = fmt.Errorf("%w: a problem needs the files' data", ErrUnread)

// Holds reports whether the next Load can take the file at path of content hash from the
// last Set without its data (sources.PartialFetcher's held): that Set holds the file's
// resources, parsed from that content. A Load that finds it cannot returns ErrUnread.
func (l *Loader) Holds(path, hash string) bool {
	l.lock()
	defer l.mu.Unlock()
	if l.last == nil || hash == "" {
		return false
	}
	f, ok := l.last.files[path]
	return ok && f.key == hash && f.renderedBy == "" && !f.rewritten
}

// Release hands set, which the last Load returned, back to the Loader: the caller no longer
// reads it, and the next Load with Options.ReuseSet may write into it. A Set other than the
// last one returned is ignored. Past keepDocuments resources, when no load comes within
// compactAfter, the Loader keeps the Set's resources encoded instead (compactResources),
// which the next load decodes: a burst of pushes loads each from the Set, in place, and a
// source at rest keeps its basis small. A packed Set's encoding (Options.Packed) is the
// basis at once.
func (l *Loader) Release(set *Set) {
	l.lock()
	defer l.mu.Unlock()
	if set == nil || l.last == nil || l.last.set != set {
		return
	}
	l.last.handedBack = true
	switch {
	case set.packed != nil:
		// Encoded already: the basis keeps the encoding, and lets the Set go.
		l.last.set, l.last.packed = nil, set.packed
	case l.keepsDocuments(len(set.Resources)):
	case l.compactAfter <= 0:
		l.compactLocked(runtime.GOMAXPROCS(0), nil)
	case l.restTimer == nil:
		l.restTimer = time.AfterFunc(l.compactAfter, l.compactAtRest)
	default:
		l.restTimer.Reset(l.compactAfter)
	}
}

// defaultCompactAfter is how long a Set handed back past keepDocuments stays a Set for the
// next load.
const defaultCompactAfter = 5 * time.Second

// compactAtRest runs compactAfter after the last Release. Nothing waits for it: it encodes
// on one goroutine, which leaves the other cores to the API and the engine (on 2 cores, a
// million resources encoded on both made the API's reads of those seconds the slowest of
// the minute), and gives way to a call that waits for the Loader (a load: the Set is then
// still there to load from in place), trying again compactAfter later, up to maxGiveWay
// times in a row.
func (l *Loader) compactAtRest() {
	l.mu.Lock()
	defer l.mu.Unlock()
	stop := func() bool { return l.waiting.Load() > 0 }
	if last := weak.Make(l.last); l.gaveWayFor != last {
		l.gaveWay, l.gaveWayFor = 0, last // a basis of its own: it has not given way yet
	}
	if l.gaveWay >= maxGiveWay {
		stop = nil // calls that came one after another since: they wait this once
	}
	if l.compactLocked(1, stop) {
		return
	}
	l.gaveWay++
	if l.restTimer != nil {
		l.restTimer.Reset(l.compactAfter)
	}
}

// maxGiveWay is how many times in a row the encoding at rest gives way before it runs to its
// end whatever waits.
const maxGiveWay = 3

// lock takes l.mu, counted in l.waiting meanwhile: the encoding at rest gives way to it.
func (l *Loader) lock() {
	l.waiting.Add(1)
	l.mu.Lock()
	l.waiting.Add(-1)
}

// compactLocked encodes the basis's resources on workers goroutines when its Set was handed
// back (a load since has made another basis, or has not, failing) and holds more than
// keepDocuments, unless stop (nil: never) reports true before a chunk; l.mu is held. It
// reports false when it stopped.
func (l *Loader) compactLocked(workers int, stop func() bool) bool {
	b := l.last
	if b == nil || b.set == nil || !b.handedBack || l.keepsDocuments(len(b.set.Resources)) {
		return true // a packed Set's encoding is the basis once handed back (Release)
	}
	c, ok, stopped := compactWith(b.set.Resources, workers, stop)
	if ok {
		b.set, b.packed = nil, c
	}
	return !stopped
}

// LoadDir reads the manifests under dir (ReadDir) and loads them with paths relative to dir.
// It serves `trueup validate`, which checks a working tree before it is pushed.
func (l *Loader) LoadDir(dir string, opts Options) (*Set, error) {
	files, err := ReadDir(dir, "")
	if err != nil {
		return nil, err
	}
	return l.Load(files, opts)
}

// ReadDir reads every *.yaml, *.yml and *.json file under dir, skipping directories whose
// name starts with a dot (.git), and names each prefix/<path below dir> (slash-separated;
// prefix may be empty). A Git source with a path names its files from the repository root,
// hence the prefix for `trueup diff`.
//
// Like the folder source, it never leaves dir: a symlink to a file inside dir is followed,
// one to a folder inside is not, and one leading out of dir (to a manifest-named file or
// to a folder) is refused unread, as is a file over the size limit (sources.File.Refused).
func ReadDir(dir, prefix string) ([]sources.File, error) { return readDir(dir, prefix, false) }

// ReadDirAll is ReadDir keeping every regular file, not only manifests: what a renderer
// reads (sources.Env.AllFiles).
func ReadDirAll(dir, prefix string) ([]sources.File, error) { return readDir(dir, prefix, true) }

func readDir(dir, prefix string, all bool) ([]sources.File, error) {
	wanted := func(name string) bool {
		return (all || sources.IsManifest(name)) && !strings.HasPrefix(name, sources.ClockProbePrefix)
	}
	var files []sources.File
	prefix = strings.Trim(prefix, "/")
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("read manifests in %s: %w", dir, err)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		link := d.Type()&fs.ModeSymlink != 0
		if !wanted(d.Name()) && !link {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if prefix != "" {
			name = prefix + "/" + name
		}
		target := p
		if link {
			if target, err = filepath.EvalSymlinks(p); err != nil {
				return nil // dangling
			}
			fi, err := os.Stat(target)
			if err != nil {
				return nil
			}
			if !sources.Within(realDir, target) {
				if fi.IsDir() || wanted(d.Name()) {
					files = append(files, sources.File{Path: name, Hash: "refused", Refused: "symlink leads outside the folder"})
				}
				return nil
			}
			if !wanted(d.Name()) {
				return nil
			}
		}
		fi, err := os.Stat(target)
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if fi.Size() > maxFileSize {
			files = append(files, sources.File{Path: name, Hash: "refused", Refused: sources.TooLarge(fi.Size())})
			return nil
		}
		data, err := readLimited(target)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since the walk saw it
		}
		if err != nil {
			return err
		}
		files = append(files, sources.File{Path: name, Hash: hashJSON(data), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read manifests in %s: %w", dir, err)
	}
	return files, nil
}

// TypeFromSpec rebuilds a ResourceType from what was stored of it (name, group, file and the
// canonical spec), so that resources may use types another source declared.
func TypeFromSpec(name, group, file string, spec json.RawMessage) (ResourceType, error) {
	var sp struct {
		Versions []struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
		} `json:"versions"`
		Action struct {
			Name string          `json:"name"`
			With json.RawMessage `json:"with"`
		} `json:"action"`
	}
	if err := json.Unmarshal(spec, &sp); err != nil {
		return ResourceType{}, fmt.Errorf("resource type %s: %w", name, err)
	}
	t := ResourceType{Name: name, Group: group, Spec: spec, File: file, Action: ActionRef{Name: sp.Action.Name, With: sp.Action.With}}
	for _, v := range sp.Versions {
		t.Versions = append(t.Versions, Version{Name: v.Name, Schema: v.Schema})
	}
	return t, nil
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

// sortedOrder returns the indices of items sorted by namespace, kind and name. prev is an
// earlier load's resources in that order: those items keep their order from it, and only
// the others (the changed files' resources) are sorted, then merged in. A load that
// changes one file of a large revision thus sorts that file's resources, not all.
func sortedOrder(items []resourceAt, prev []*resourceDoc) []int {
	// Namespaces and kinds by their rank among the revision's few: the keys compare two
	// numbers before the names, and take 32 bytes a resource where the symbols took 40.
	rank := symRanks(items)
	type sortKey struct {
		name            string
		namespace, kind uint32
		i               int32
	}
	key := func(i int) sortKey {
		r := items[i].p.doc.res
		return sortKey{r.name, rank[r.namespace], rank[items[i].p.doc.kind], int32(i)}
	}
	compare := func(a, b sortKey) int {
		if c := cmp.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		if c := cmp.Compare(a.kind, b.kind); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	}
	var kept []int
	taken := make([]bool, len(items))
	if len(prev) > 0 {
		at := make(map[*resourceDoc]int, len(items))
		for i := range items {
			at[items[i].p.doc.res] = i
		}
		kept = make([]int, 0, len(items))
		for _, r := range prev {
			if i, ok := at[r]; ok && !taken[i] {
				kept = append(kept, i)
				taken[i] = true
			}
		}
	}
	// Sorted by keys gathered once rather than through each item's pointers.
	fresh := make([]sortKey, 0, len(items)-len(kept))
	for i := range items {
		if !taken[i] {
			fresh = append(fresh, key(i))
		}
	}
	slices.SortFunc(fresh, compare)
	order := make([]int, 0, len(items))
	for len(kept) > 0 && len(fresh) > 0 {
		if compare(key(kept[0]), fresh[0]) <= 0 {
			order, kept = append(order, kept[0]), kept[1:]
		} else {
			order, fresh = append(order, int(fresh[0].i)), fresh[1:]
		}
	}
	order = append(order, kept...)
	for _, k := range fresh {
		order = append(order, int(k.i))
	}
	return order
}

// symRanks numbers the namespaces and the kinds of items in the order of their strings.
func symRanks(items []resourceAt) map[sym]uint32 {
	seen := map[sym]bool{}
	var syms []sym
	var last [2]sym
	for i := range items {
		for _, s := range [2]sym{items[i].p.doc.res.namespace, items[i].p.doc.kind} {
			if s != last[0] && s != last[1] && !seen[s] {
				seen[s] = true
				syms = append(syms, s)
			}
		}
		last = [2]sym{items[i].p.doc.res.namespace, items[i].p.doc.kind}
	}
	slices.SortFunc(syms, compareSyms)
	rank := make(map[sym]uint32, len(syms))
	for i, s := range syms {
		rank[s] = uint32(i)
	}
	return rank
}
