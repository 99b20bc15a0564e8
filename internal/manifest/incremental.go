package manifest

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/trueup-dev/trueup/sources"
)

// basis is what an incremental load starts from: the last Set a Load returned and what it
// was made of. A revision that changes a few files of resources is loaded from it by parsing
// and checking only those files' documents; the other files' resources are the basis's, which
// is exact because a resource depends only on its file's content and path, on the types
// (which such a revision does not change) and on the Options (which must be the same).
// Whatever else a revision does (a type or ResourceSet in a changed file, a problem anywhere)
// is loaded in full, so that its Set or its list of problems is the one a full load gives.
type basis struct {
	key   string               // optionsKey of the load
	files map[string]basisFile // by path
	// set is the Set the load returned, handedBack once its caller has handed it back
	// (Release); past keepDocuments, once at rest (a packed Set's once handed back), packed
	// holds its resources and set is nil.
	set        *Set
	handedBack bool
	packed     *compactResources
	// types and infos are the types of the files and the registry resources were checked
	// against; typeFiles the paths of files holding other documents than resources.
	types     []ResourceType
	infos     map[string]*typeInfo
	typeFiles map[string]bool
	// docs and resources count the revision's documents and resources (Limits); cel is
	// what the rules of every resource cost (celRevisionBudget).
	docs, resources int
	cel             uint64
	// deps is whether a resource of set may have dependencies (true once one has had).
	deps bool
	// counts is each file's share of docs, resources and cel: what a load that drops or
	// changes the file takes off, without the file's parsed documents, which the Loader
	// keeps only for a revision of up to Loader.keepDocuments resources.
	counts map[string]fileCounts
}

// fileCounts is one file's documents and resources, and what its resources' rules cost.
type fileCounts struct {
	docs, resources int
	cel             uint64
}

// basisFile is one file of a basis: its cache key, what renders it, and whether the caller
// rewrites its resources (Options.Rewritten), which are then never taken from the basis.
type basisFile struct {
	key, renderedBy string
	rewritten       bool
}

// optionsKey fingerprints what a load's outcome depends on besides the files: a basis serves
// only loads with the same. CheckAction and CheckReference are asked again by every load.
func optionsKey(opts Options, budget uint64) string {
	h := sha256.New()
	fmt.Fprintf(h, "%t %t %t %t %d %+v\n", opts.EncryptedUnknown, opts.CheckAction != nil, opts.CheckReference != nil,
		opts.InputFiles != nil, budget, opts.Limits.withDefaults())
	for _, t := range opts.KnownTypes {
		fmt.Fprintf(h, "%q %q %q %s\n", t.Name, t.Group, t.File, t.Spec)
		for _, v := range t.Versions {
			fmt.Fprintf(h, "%q %s\n", v.Name, v.Schema)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// newBasis is the basis of a full load that returned set, or nil when set cannot serve as
// one: ResourceSets (generated resources depend on other files), transition rules (checked
// against the set as a whole), a path loaded twice (rendered by several kustomizations).
func newBasis(files []sources.File, counted docCounts, set *Set, infos map[string]*typeInfo, cel uint64, key string, rewritten map[string]bool) *basis {
	if len(set.ResourceSets) > 0 || len(set.transitions) > 0 || set.Files == nil {
		return nil
	}
	b := &basis{key: key, files: make(map[string]basisFile, len(files)), set: set, types: set.Types, infos: infos,
		typeFiles: counted.typeFiles, docs: counted.docs, resources: set.Len(), cel: cel, counts: counted.files}
	for _, f := range files {
		if _, twice := b.files[f.Path]; twice || f.Refused != "" {
			return nil
		}
		b.files[f.Path] = basisFile{key: set.Files[f.Path], renderedBy: f.RenderedBy, rewritten: rewritten[f.Path]}
	}
	b.deps = set.HasDependencies()
	return b
}

// docCounts is what a basis keeps of a revision's documents (countDocs): how many, each
// file's share (files), and the paths of files holding other documents than resources.
type docCounts struct {
	docs      int
	files     map[string]fileCounts
	typeFiles map[string]bool
}

// countDocs counts docs for a basis, once checked (each file's share of the rules' cost).
func countDocs(docs []placed) docCounts {
	c := docCounts{docs: len(docs), files: map[string]fileCounts{}, typeFiles: map[string]bool{}}
	for _, p := range docs {
		fc := c.files[p.file]
		fc.docs++
		if p.doc.res == nil {
			c.typeFiles[p.file] = true
		} else {
			fc.resources++
			fc.cel += uint64(p.doc.res.celCost)
		}
		c.files[p.file] = fc
	}
	return c
}

// incremental loads files from the loader's basis when it can; ok is false when the revision
// must be loaded in full. A revision with problems is always loaded in full, which reports
// all of them.
func (ld *load) incremental(files []sources.File, lim Limits, key string) (*Set, bool) {
	b := ld.l.last
	if b == nil || b.key != key {
		return nil, false
	}
	// What changed: files new or of another content (or rendered by another
	// kustomization), and the basis's files gone or changed (dropped). The resources of a
	// file the caller rewrites once loaded (Options.Rewritten: sealed's encrypted files) are
	// never taken from the basis, nor are those of a file it rewrote in the basis.
	now := make(map[string]basisFile, len(files))
	var changed []int
	for i := range files {
		f := &files[i]
		if f.Refused != "" {
			return nil, false
		}
		if _, twice := now[f.Path]; twice {
			return nil, false
		}
		bf := basisFile{key: f.Hash, renderedBy: f.RenderedBy, rewritten: ld.opts.Rewritten[f.Path]}
		if bf.key == "" {
			bf.key = "sha256:" + hashJSON(f.Data)
		}
		now[f.Path] = bf
		if old, ok := b.files[f.Path]; !ok || old != bf || bf.rewritten {
			if f.Unread {
				return nil, false
			}
			changed = append(changed, i)
		}
	}
	dropped := map[string]bool{}
	for p := range b.files {
		if nf, ok := now[p]; !ok || nf != b.files[p] || nf.rewritten {
			if b.typeFiles[p] {
				return nil, false
			}
			dropped[p] = true
		}
	}
	// The dropped files' share of the counts.
	docs, resources, cel := b.docs, b.resources, b.cel
	counts := maps.Clone(b.counts)
	goneCount := 0
	for p := range dropped {
		c := counts[p]
		docs, resources, cel, goneCount = docs-c.docs, resources-c.resources, cel-c.cel, goneCount+c.resources
		delete(counts, p)
	}

	// Parse the changed files (the cache may hold some), in path order as a full load.
	slices.SortFunc(changed, func(a, c int) int { return cmp.Compare(files[a].Path, files[c].Path) })
	entries := make([]*fileEntry, len(changed))
	var todo []int
	for j, i := range changed {
		if e, ok := ld.l.files[now[files[i].Path].key]; ok {
			entries[j] = e
		} else {
			todo = append(todo, j)
		}
	}
	parallel(len(todo), func(k int) {
		entries[todo[k]] = parseFile(files[changed[todo[k]]].Data, files[changed[todo[k]]].RenderedBy != "")
	})
	for _, j := range todo {
		// A full load after all finds them here.
		ld.l.files[now[files[changed[j]].Path].key] = entries[j]
	}
	var fresh []placed
	for j, i := range changed {
		f, e := &files[i], entries[j]
		if len(e.errs) > 0 {
			return nil, false
		}
		src := &source{file: f.Path, key: now[f.Path].key, data: f.Data}
		if f.RenderedBy != "" {
			src.origin = "rendered by " + f.RenderedBy
		}
		docs += len(e.docs)
		counts[f.Path] = fileCounts{docs: len(e.docs), resources: len(e.docs)}
		for k := range e.docs {
			d := &e.docs[k]
			if d.res == nil {
				return nil, false // a type, a ResourceSet: the revision's registry changes
			}
			resources++
			fresh = append(fresh, placed{source: src, doc: d})
		}
	}
	if docs > lim.MaxDocuments || resources > lim.MaxResources {
		return nil, false
	}
	// Actions are asked again: the controller's config may have changed what they accept.
	if ld.opts.CheckAction != nil {
		for _, t := range b.types {
			if t.Action.Name != "" && ld.opts.CheckAction(t.Action.Name, t.Action.With) != nil {
				return nil, false
			}
		}
	}

	items, stale := ld.match(fresh, b.infos)
	if len(ld.errs) > 0 || len(items) != len(fresh) {
		return nil, false
	}
	// The resources kept from the basis (an encoded basis decoded only now, past the checks
	// that need none), whether this load may write into their array, and where the dropped
	// files' resources are in it: found by their file, in one pass (in order, so gone is
	// sorted).
	//
	// A packed basis of a caller that reads packed Sets (Options.Packed) stays packed when no
	// resource of it has dependencies (nor are files rewritten): only the chunks the change
	// touches are decoded, and encoded again (packedIncremental).
	if pk := b.packedResources(); pk != nil && ld.opts.Packed && len(ld.opts.Rewritten) == 0 && !b.deps {
		return ld.packedIncremental(b, pk, now, dropped, goneCount, counts, docs, resources, cel, items, stale)
	}
	kept, own := b.keptResources(ld.opts.ReuseSet)
	var gone []int
	if len(dropped) > 0 {
		// One file dropped, the usual case, is compared as a string, not looked up.
		only := ""
		if len(dropped) == 1 {
			for p := range dropped {
				only = p
			}
		}
		gone = make([]int, 0, goneCount)
		for i := range kept {
			if f := kept[i].File; f == only || only == "" && dropped[f] {
				gone = append(gone, i)
			}
		}
		if len(gone) != goneCount {
			return nil, false
		}
	}
	// A resource declared again in a file kept from the basis is a duplicate.
	for _, it := range items {
		r := it.p.doc.res
		if at, found := findResource(kept, r.namespace.String(), it.p.doc.kind.String(), r.name); found && !dropped[kept[at].File] {
			return nil, false
		}
	}
	made, cel, deps, ok := ld.checkMade(items, stale, counts, cel)
	if !ok {
		return nil, false
	}
	// The basis is acyclic. A cycle needs a dependency of a resource made here, or, when
	// the identities change, any dependency: the graph knows kinds case-insensitively and
	// takes the first of the resources of one key, so removing one (DB/n/a) hands its node
	// to another (Db/n/a) whose dependencies may close a cycle.
	same := sameIdentities(kept, gone, made)
	if ld.opts.CheckReference != nil {
		// Every resource's: the controller's grants may have changed (only made's when no
		// kept resource has a dependency).
		ld.checkReferences(made)
		if b.deps {
			from := 0
			for _, g := range gone {
				ld.checkReferences(kept[from:g])
				from = g + 1
			}
			ld.checkReferences(kept[from:])
		}
		if len(ld.errs) > 0 {
			return nil, false
		}
	}
	// Checked on the resources in their merged order before any is moved: a rejected load
	// leaves the basis as it was.
	if (deps || (b.deps && !same)) && CycleErrors(mergedGraphNodes(kept, gone, made)) != nil {
		return nil, false
	}
	anyDeps := deps || b.deps // a resource of the Set may have dependencies
	if own {
		// The revision changes resources in the last Set, which the caller handed back: when
		// they are the same ones they take their old places, else the others move aside in
		// it when it has room.
		if same {
			for k, g := range gone {
				kept[g] = made[k]
			}
			return ld.done(b, now, counts, docs, resources, cel, kept, anyDeps), true
		}
		if merged, ok := mergeInPlace(kept, gone, made); ok {
			return ld.done(b, now, counts, docs, resources, cel, merged, anyDeps), true
		}
	}
	merged := mergeResources(kept, gone, made, ld.opts.ReuseSet)
	return ld.done(b, now, counts, docs, resources, cel, merged, anyDeps), true
}

// checkMade checks the resources of the changed files (items; stale: those whose cached
// checks are stale), adds what their rules cost to cel and to their files' counts, and makes
// them, sorted by namespace, kind and name; deps says one has dependencies. false when the
// revision must be loaded in full (a problem, a resource of a type with transition rules).
func (ld *load) checkMade(items []resourceAt, stale []int, counts map[string]fileCounts, cel uint64) (made []Resource, _ uint64, deps, ok bool) {
	spent := cel
	for _, it := range items {
		if r := it.p.doc.res; r.checkedWith == it.cs.id {
			spent += uint64(r.celCost)
		}
	}
	ld.celSpent.Store(spent)
	ld.checkStale(items, stale)
	for _, it := range items {
		cost := uint64(it.p.doc.res.celCost)
		cel += cost
		c := counts[it.p.file]
		c.cel += cost
		counts[it.p.file] = c
		if len(it.p.doc.res.problems()) > 0 {
			return nil, 0, false, false
		}
	}
	if len(ld.errs) > 0 || ld.celSkipped.Load() || cel > ld.l.revisionBudget {
		return nil, 0, false, false
	}

	metaHashes(items)
	slices.SortStableFunc(items, func(a, c resourceAt) int {
		ra, rc := a.p.doc.res, c.p.doc.res
		return cmp.Or(compareSyms(ra.namespace, rc.namespace), compareSyms(a.p.doc.kind, c.p.doc.kind), strings.Compare(ra.name, rc.name))
	})
	made, transitions := buildResources(items, false)
	if len(transitions) > 0 {
		return nil, 0, false, false
	}
	for i := range made {
		deps = deps || len(made[i].DependsOn) > 0
	}
	return made, cel, deps, true
}

// packedResources is b's resources encoded, or nil when b holds them decoded.
func (b *basis) packedResources() *compactResources {
	if b.packed != nil {
		return b.packed
	}
	return b.set.packed
}

// packedIncremental is the rest of incremental for a packed basis pk without dependencies
// (b.deps false): the dropped files' resources are found in the chunks whose strings name
// those files (compactResources.inFiles), a resource declared again in the chunk whose last
// identity bounds it (decodedChunks.find), and the Set is pk with the change merged in
// (merge), packed, the chunks merged kept decoded for its reader (Set.warm). Its checks are
// incremental's.
func (ld *load) packedIncremental(b *basis, pk *compactResources, now map[string]basisFile, dropped map[string]bool, goneCount int,
	counts map[string]fileCounts, docs, resources int, cel uint64, items []resourceAt, stale []int) (*Set, bool) {
	dc := newDecodedChunks(pk)
	gone := []int{}
	if len(dropped) > 0 {
		gone = pk.inFiles(dropped, dc.get)
	}
	if len(gone) != goneCount {
		return nil, false
	}
	// A resource declared again in a file kept from the basis is a duplicate. Looked up in
	// identity order, a chunk decoded once: a file's resources in file order may be in a
	// chunk each by turns (a namespace each).
	ids := make([][3]string, len(items))
	for i, it := range items {
		ids[i] = [3]string{it.p.doc.res.namespace.String(), it.p.doc.kind.String(), it.p.doc.res.name}
	}
	slices.SortFunc(ids, func(a, c [3]string) int {
		return cmp.Or(strings.Compare(a[0], c[0]), strings.Compare(a[1], c[1]), strings.Compare(a[2], c[2]))
	})
	for _, id := range ids {
		if k, found := dc.find(id[0], id[1], id[2]); found && !dropped[k.File] {
			return nil, false
		}
	}
	ids = nil
	made, cel, deps, ok := ld.checkMade(items, stale, counts, cel)
	if !ok {
		return nil, false
	}
	if ld.opts.CheckReference != nil {
		ld.checkReferences(made) // no kept resource has a dependency
		if len(ld.errs) > 0 {
			return nil, false
		}
	}
	merged, warm, ok := pk.merge(gone, made, dc.get)
	dc = nil
	if !ok {
		return nil, false
	}
	// Only the resources made here have dependencies: a cycle is among them, through the
	// merged identities.
	if deps && CycleErrors(graphNodesOf(merged.n, merged.each)) != nil {
		return nil, false
	}
	set := ld.done(b, now, counts, docs, resources, cel, nil, deps)
	set.packed, set.warm = merged, warm
	return set, true
}

// keptResources are b's resources, and whether the load may write into their array: a
// decoded copy of packed always (with room for the next load when it reuses Sets, reuse), the
// Set's only with Options.ReuseSet (reuse) when its caller handed it back (a load that
// failed since leaves it so).
func (b *basis) keptResources(reuse bool) ([]Resource, bool) {
	if pk := b.packedResources(); pk != nil {
		return pk.resources(reuse), true
	}
	return b.set.Resources, reuse && b.handedBack
}

// done makes the Set of an incremental load from b with resources, and makes it the basis;
// deps is whether a resource may have dependencies.
func (ld *load) done(b *basis, now map[string]basisFile, counts map[string]fileCounts, docs, resources int, cel uint64, merged []Resource, deps bool) *Set {
	if ld.opts.Parsed != nil {
		// Only now: a load that gives up is followed by a full one, which calls it.
		ld.opts.Parsed(docs)
	}
	set := &Set{Types: slices.Clone(b.types), Resources: merged, Files: make(map[string]string, len(now)), encryptedUnknown: ld.opts.EncryptedUnknown}
	used := make(map[string]*fileEntry, len(now))
	keep := ld.l.keepsDocuments(resources)
	for p, f := range now {
		set.Files[p] = f.key
		if e := ld.l.files[f.key]; e != nil && keep {
			used[f.key] = e
		}
	}
	ld.l.files = used
	// The order of a full load's resources would keep dropped documents alive; the next full
	// load sorts afresh.
	ld.l.sorted = nil
	ld.l.incrementals++
	ld.l.last = &basis{key: b.key, files: now, set: set, types: b.types, infos: b.infos, typeFiles: b.typeFiles,
		docs: docs, resources: resources, cel: cel, deps: deps, counts: counts}
	return set
}

// sameIdentities reports whether made (sorted) are the resources at gone (sorted indexes in
// kept) by identity, one for one.
func sameIdentities(kept []Resource, gone []int, made []Resource) bool {
	if len(gone) != len(made) {
		return false
	}
	for k, g := range gone {
		if a, c := &kept[g], &made[k]; a.Namespace != c.Namespace || a.Kind != c.Kind || a.Name != c.Name {
			return false
		}
	}
	return true
}

// findResource finds the resource of an identity in resources sorted by namespace, kind and
// name.
func findResource(resources []Resource, namespace, kind, name string) (int, bool) {
	at := sort.Search(len(resources), func(i int) bool {
		r := &resources[i]
		return cmp.Or(strings.Compare(r.Namespace, namespace), strings.Compare(r.Kind, kind), strings.Compare(r.Name, name)) >= 0
	})
	return at, at < len(resources) && resources[at].Namespace == namespace && resources[at].Kind == kind && resources[at].Name == name
}

// mergeResources is kept without the resources at gone (sorted indexes), with made merged
// in; kept and made are sorted by namespace, kind and name, and no identity is in both. The
// kept resources are copied in runs, between the few places where one goes or one comes,
// into a new array (with room for a few more when room: resourcesCap).
func mergeResources(kept []Resource, gone []int, made []Resource, room bool) []Resource {
	out := make([]Resource, 0, resourcesCap(len(kept)-len(gone)+len(made), room))
	mergeRuns(kept, gone, made,
		func(lo, hi int) { out = append(out, kept[lo:hi]...) },
		func(r *Resource) { out = append(out, *r) })
	return out
}

// mergedGraphNodes is graphNodesOf the resources of mergeResources(kept, gone, made),
// without the merged array.
func mergedGraphNodes(kept []Resource, gone []int, made []Resource) []GraphNode {
	return graphNodesOf(len(kept)-len(gone)+len(made), func(yield func(*Resource) bool) {
		stop := false
		mergeRuns(kept, gone, made, func(lo, hi int) {
			for i := lo; i < hi && !stop; i++ {
				stop = !yield(&kept[i])
			}
		}, func(r *Resource) {
			stop = stop || !yield(r)
		})
	})
}

// mergeRuns walks mergeResources' order: run(lo, hi) for each run of kept[lo:hi], empty ones
// too, and add(r) for each of made.
func mergeRuns(kept []Resource, gone []int, made []Resource, run func(lo, hi int), add func(*Resource)) {
	from := 0 // the next of kept to walk
	for i := range made {
		r := &made[i]
		to, _ := findResource(kept, r.Namespace, r.Kind, r.Name) // where r goes in kept
		for len(gone) > 0 && gone[0] < to {
			run(from, gone[0])
			from, gone = gone[0]+1, gone[1:]
		}
		run(from, max(from, to))
		from = max(from, to)
		add(r)
	}
	for _, g := range gone {
		run(from, g)
		from = g + 1
	}
	run(from, len(kept))
}

// resourcesCap is the capacity of a Set's n resources: with room (a Set its Loader may write
// into again, Options.ReuseSet), a few more, so that the next load adding a resource or two
// moves the others aside in place (mergeInPlace) instead of copying the Set.
func resourcesCap(n int, room bool) int {
	if !room {
		return n
	}
	return n + n/256 + 64
}

// mergeInPlace is mergeResources written into kept's own array, when it has room: the
// resources at gone close up, front to back, then each of made opens its place, back to
// front, moving the resources after it in one copy; a tail left by a shrink is cleared so
// that the collector can take what it held. false (kept untouched) when there is no room, or
// when the revision keeps less than half the resources (an array of their size is kept
// instead of the larger one).
func mergeInPlace(kept []Resource, gone []int, made []Resource) ([]Resource, bool) {
	n := len(kept) - len(gone) + len(made)
	if n > cap(kept) || n < len(kept)/2 {
		return nil, false
	}
	live := len(kept)
	if len(gone) > 0 {
		live = gone[0]
		for i, g := range gone {
			end := len(kept)
			if i+1 < len(gone) {
				end = gone[i+1]
			}
			live += copy(kept[live:], kept[g+1:end])
		}
	}
	old := len(kept)
	out := kept[:n]
	// out[:live] holds the kept resources not yet placed, out[live+j+1:] is final.
	for j := len(made) - 1; j >= 0; j-- {
		at, _ := findResource(out[:live], made[j].Namespace, made[j].Kind, made[j].Name)
		copy(out[at+j+1:], out[at:live])
		out[at+j] = made[j]
		live = at
	}
	if n < old {
		clear(kept[n:old])
	}
	return out, true
}
