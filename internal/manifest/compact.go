package manifest

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// packChunk is how many resources are encoded together, and share one block of strings once
// decoded.
const packChunk = 4096

// compactResources is a basis's resources once its caller has handed its Set back (Release)
// past keepDocuments, or a packed Set's (Options.Packed): encoded, chunk by chunk of about
// packChunk resources, into one byte slice each, where a Resource struct alone is 224 bytes.
// Between two syncs of a large source the basis is most of what the process keeps (about 330
// bytes a resource as a Set, and half again of it for the collector's room); encoded it is
// the names, specs and binary spec hashes, and a few bytes of indexes a resource. The next
// incremental load decodes it into a Set of its own (resources), which the Loader may write
// into, or, for a packed Set, merges its change into a copy of the chunk list (merge).
//
// What repeats (kinds, namespaces, files) is stored once a chunk, in strs, and meta hashes
// once a chunk as 32 bytes; the label and annotation maps, which a Set shares between
// resources, once a chunk in maps, and the decoded resources share them as the Set's did.
type compactResources struct {
	n      int
	chunks []compactChunk
	// offs is each chunk's first index, and n: a chunk holds packChunk resources when
	// encoded from a Set, and fewer or more once a load has merged its changes (merge).
	offs []int
}

// newCompact is n resources in chunks of packChunk, to encode.
func newCompact(n int) *compactResources {
	c := &compactResources{chunks: make([]compactChunk, (n+packChunk-1)/packChunk)}
	for k := range c.chunks {
		c.chunks[k].n = min(packChunk, n-k*packChunk)
	}
	c.index()
	return c
}

// index sets n and offs from the chunks' sizes.
func (c *compactResources) index() {
	c.offs = make([]int, len(c.chunks)+1)
	for k := range c.chunks {
		c.offs[k+1] = c.offs[k] + c.chunks[k].n
	}
	c.n = c.offs[len(c.chunks)]
}

// part is the range of indexes of chunk k.
func (c *compactResources) part(k int) (lo, hi int) { return c.offs[k], c.offs[k+1] }

// chunkOf is the chunk of the resource at index i.
func (c *compactResources) chunkOf(i int) int {
	return sort.Search(len(c.chunks), func(k int) bool { return c.offs[k+1] > i })
}

// compactChunk is a run of resources (packChunk, or about as many) encoded.
type compactChunk struct {
	n    int
	data []byte
	strs []string
	// metas are the distinct meta hashes (lowercase hex of 32 bytes) as bytes: a meta hash
	// repeats across a file's resources of one label set, and is its own otherwise.
	metas [][32]byte
	maps  []map[string]string // index 0 is nil
	// text is the bytes of the names and spec hashes decoded, specs of the specs: each goes
	// into one block a chunk when decoded (see leanResources).
	text, specs int
	// deps: a resource of the chunk has dependencies. last is the identity of its last
	// resource (namespace, kind, name), nss its resources' namespaces (they are sorted by
	// namespace first).
	deps bool
	last [3]string
	nss  []string
}

// compactOf encodes rs on every core; false when a resource cannot be (a generated one,
// whose origin a basis does not hold: there is no basis when a ResourceSet generates
// resources).
func compactOf(rs []Resource) (*compactResources, bool) {
	c, ok, _ := compactWith(rs, runtime.GOMAXPROCS(0), nil)
	return c, ok
}

// compactWith encodes rs as compactOf does, on workers goroutines, and gives up when stop
// (nil: never) reports true before a chunk: stopped then says so, and c is nil.
func compactWith(rs []Resource, workers int, stop func() bool) (c *compactResources, ok, stopped bool) {
	c = newCompact(len(rs))
	var failed, gaveUp atomic.Bool
	parallelOn(workers, len(c.chunks), func(k int) {
		if failed.Load() || gaveUp.Load() {
			return
		}
		if stop != nil && stop() {
			gaveUp.Store(true)
			return
		}
		if lo, hi := c.part(k); !c.chunks[k].encode(rs[lo:hi]) {
			failed.Store(true)
		}
	})
	if gaveUp.Load() {
		return nil, false, true
	}
	return c, !failed.Load(), false
}

// resources decodes the resources, in their order, into a new array (with room for a few
// more when room: resourcesCap).
func (c *compactResources) resources(room bool) []Resource {
	out := make([]Resource, c.n, resourcesCap(c.n, room))
	parallel(len(c.chunks), func(k int) {
		lo, hi := c.part(k)
		c.chunks[k].decode(out[lo:hi])
	})
	return out
}

// deps reports whether a resource has dependencies.
func (c *compactResources) deps() bool {
	for k := range c.chunks {
		if c.chunks[k].deps {
			return true
		}
	}
	return false
}

// each yields the resources in their order, decoded a chunk at a time (a resource yielded
// lives as long as the caller keeps it, its chunk's decoded resources with it).
func (c *compactResources) each(yield func(*Resource) bool) {
	for k := range c.chunks {
		rs := c.chunks[k].decoded()
		for i := range rs {
			if !yield(&rs[i]) {
				return
			}
		}
	}
}

// decoded is the chunk's resources in a new array.
func (ch *compactChunk) decoded() []Resource {
	rs := make([]Resource, ch.n)
	ch.decode(rs)
	return rs
}

// Tags of a spec hash: 32 bytes that are the hash of a lowercase hex string of 64, or the
// string as it is.
const (
	hashBinary = 0
	hashString = 1
)

// encodeBuffers are scratch buffers of compactChunk.encode: a chunk is written into one, then
// copied at its size.
var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

func (ch *compactChunk) encode(rs []Resource) bool {
	ch.n = len(rs)
	strs := map[string]uint64{}
	maps := map[unsafe.Pointer]uint64{}
	ch.maps = []map[string]string{nil}
	// The resources are in identity order: a field often holds its previous resource's
	// string (a namespace, a kind, a file for a run of names), found without a lookup.
	var last [7]string
	var lastAt [7]uint64
	sym := func(b []byte, field int, s string) []byte {
		if i := lastAt[field]; i > 0 && last[field] == s {
			return binary.AppendUvarint(b, i-1)
		}
		i, ok := strs[s]
		if !ok {
			i = uint64(len(ch.strs))
			strs[s] = i
			ch.strs = append(ch.strs, s)
		}
		last[field], lastAt[field] = s, i+1
		return binary.AppendUvarint(b, i)
	}
	mapRef := func(b []byte, m map[string]string) []byte {
		if m == nil {
			return append(b, 0)
		}
		p := reflect.ValueOf(m).UnsafePointer()
		i, ok := maps[p]
		if !ok {
			i = uint64(len(ch.maps))
			maps[p] = i
			ch.maps = append(ch.maps, m)
		}
		return binary.AppendUvarint(b, i)
	}
	metas := map[string]uint64{}
	lastMeta, lastMetaAt := "", uint64(0)
	meta := func(b []byte, s string) []byte {
		if lastMetaAt > 0 && s == lastMeta {
			return binary.AppendUvarint(append(b, hashBinary), lastMetaAt-1)
		}
		i, ok := metas[s]
		if !ok {
			raw, isHash := binaryHash(s)
			if !isHash {
				return sym(append(b, hashString), 6, s)
			}
			i = uint64(len(ch.metas))
			metas[s] = i
			ch.metas = append(ch.metas, raw)
		}
		lastMeta, lastMetaAt = s, i+1
		return binary.AppendUvarint(append(b, hashBinary), i)
	}
	scratch := encodeBuffers.Get().(*[]byte)
	defer encodeBuffers.Put(scratch)
	b := (*scratch)[:0]
	defer func() { *scratch = b[:0] }()
	for i := range rs {
		r := &rs[i]
		if r.gen != nil {
			return false
		}
		for f, s := range [...]string{r.APIVersion, r.Kind, r.Namespace, r.File, r.fileOrigin, r.Sealed} {
			b = sym(b, f, s)
		}
		b = meta(b, r.MetaHash)
		b = appendBytes(b, r.Name)
		b = binary.AppendVarint(b, int64(r.Line))
		b = mapRef(b, r.Labels)
		b = mapRef(b, r.Annotations)
		b = appendNilable(b, r.Spec == nil, len(r.Spec))
		b = append(b, r.Spec...)
		if raw, ok := binaryHash(r.SpecHash); ok {
			b = append(append(b, hashBinary), raw[:]...)
		} else {
			b = appendBytes(append(b, hashString), r.SpecHash)
		}
		b = appendNilable(b, r.DependsOn == nil, len(r.DependsOn))
		ch.deps = ch.deps || len(r.DependsOn) > 0
		if len(ch.nss) == 0 || ch.nss[len(ch.nss)-1] != r.Namespace {
			ch.nss = append(ch.nss, r.Namespace)
		}
		for _, d := range r.DependsOn {
			b = sym(b, 1, d.Target.Kind)
			b = sym(b, 2, d.Target.Namespace)
			b = appendBytes(b, d.Target.Name)
			b = appendBool(b, d.Explicit)
			b = appendNilable(b, d.Outputs == nil, len(d.Outputs))
			for _, o := range d.Outputs {
				b = appendBytes(b, o)
			}
		}
		ch.text += len(r.Name) + len(r.SpecHash)
		ch.specs += len(r.Spec)
	}
	ch.data = append([]byte(nil), b...) // at its size
	if len(rs) > 0 {
		r := &rs[len(rs)-1]
		ch.last = [3]string{r.Namespace, r.Kind, strings.Clone(r.Name)}
	}
	return true
}

func (ch *compactChunk) decode(out []Resource) {
	var text strings.Builder
	text.Grow(ch.text)
	specs := make([]byte, 0, ch.specs)
	lens := make([]int32, 2*len(out))      // each resource's name and spec hash in text
	metas := make([]string, len(ch.metas)) // once a chunk, shared by its resources
	for i := range ch.metas {
		var hx [64]byte
		hex.Encode(hx[:], ch.metas[i][:])
		metas[i] = string(hx[:])
	}
	d := compactReader{b: ch.data}
	for i := range out {
		r := &out[i]
		r.APIVersion, r.Kind, r.Namespace = ch.strs[d.uvarint()], ch.strs[d.uvarint()], ch.strs[d.uvarint()]
		r.File, r.fileOrigin, r.Sealed = ch.strs[d.uvarint()], ch.strs[d.uvarint()], ch.strs[d.uvarint()]
		if d.next(1)[0] == hashBinary {
			r.MetaHash = metas[d.uvarint()]
		} else {
			r.MetaHash = ch.strs[d.uvarint()]
		}
		name := d.bytes()
		text.Write(name)
		r.Line = int(d.varint())
		r.Labels, r.Annotations = ch.maps[d.uvarint()], ch.maps[d.uvarint()]
		if n, ok := d.nilable(); ok {
			at := len(specs)
			specs = append(specs, d.next(n)...)
			r.Spec = specs[at:len(specs):len(specs)]
		}
		hashAt := text.Len()
		if d.next(1)[0] == hashBinary {
			var hx [64]byte
			hex.Encode(hx[:], d.next(32))
			text.Write(hx[:])
		} else {
			text.Write(d.bytes())
		}
		lens[2*i], lens[2*i+1] = int32(len(name)), int32(text.Len()-hashAt)
		if n, ok := d.nilable(); ok {
			r.DependsOn = make([]Dependency, n)
			for k := range r.DependsOn {
				dep := &r.DependsOn[k]
				dep.Target.Kind, dep.Target.Namespace = ch.strs[d.uvarint()], ch.strs[d.uvarint()]
				dep.Target.Name = string(d.bytes())
				dep.Explicit = d.next(1)[0] == 1
				if m, ok := d.nilable(); ok {
					dep.Outputs = make([]string, m)
					for j := range dep.Outputs {
						dep.Outputs[j] = string(d.bytes())
					}
				}
			}
		}
	}
	s, at := text.String(), 0
	for i := range out {
		n, h := int(lens[2*i]), int(lens[2*i+1])
		out[i].Name, out[i].SpecHash = s[at:at+n], s[at+n:at+n+h]
		at += n + h
	}
}

// compactReader reads what compactChunk.encode wrote; the data is its own, so a read past
// the end is a defect and panics.
type compactReader struct {
	b []byte
}

func (d *compactReader) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	d.b = d.b[n:]
	return v
}

func (d *compactReader) varint() int64 {
	v, n := binary.Varint(d.b)
	d.b = d.b[n:]
	return v
}

func (d *compactReader) next(n int) []byte {
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *compactReader) bytes() []byte { return d.next(int(d.uvarint())) }

// nilable reads appendNilable's length; false for nil.
func (d *compactReader) nilable() (int, bool) {
	v := d.uvarint()
	return int(v) - 1, v > 0
}

func appendBytes(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendNilable writes 0 for nil, else the length n plus one.
func appendNilable(b []byte, isNil bool, n int) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// binaryHash is the 32 bytes a lowercase hex string of 64 spells; false for any other string.
func binaryHash(s string) (raw [32]byte, ok bool) {
	if len(s) != 64 {
		return raw, false
	}
	bad := byte(0)
	for i := range raw {
		hi, lo := hexValue[s[2*i]], hexValue[s[2*i+1]]
		bad |= hi | lo
		raw[i] = hi<<4 | lo&15
	}
	return raw, bad&0x10 == 0
}

// hexValue is each byte's value as a lowercase hex digit, 0x10 for any other byte.
var hexValue = func() (t [256]byte) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = byte(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = byte(c - 'a' + 10)
		default:
			t[c] = 0x10
		}
	}
	return t
}()

// decodedChunks decodes chunks of c, each once while it is held, up to maxKeptChunks of
// them: a load from a packed basis reads the chunks of the changed files' resources three
// times (where they are, whether a resource is declared again, the merge), and its Set's
// reader (the apply) once more. A change that touches more chunks decodes the others each
// time instead of holding them all decoded.
type decodedChunks struct {
	c *compactResources
	m map[int][]Resource
}

// maxKeptChunks is how many chunks decodedChunks and a Set's warm chunks hold decoded at most:
// 131,072 resources (about 45 MB) in chunks of packChunk, twice that in chunks a merge grew.
const maxKeptChunks = 32

func newDecodedChunks(c *compactResources) *decodedChunks {
	return &decodedChunks{c: c, m: map[int][]Resource{}}
}

// get is chunk k decoded.
func (d *decodedChunks) get(k int) []Resource {
	rs, ok := d.m[k]
	if !ok {
		rs = d.c.chunks[k].decoded()
		if len(d.m) < maxKeptChunks {
			d.m[k] = rs
		}
	}
	return rs
}

// find is the resource of an identity, if c holds it; only the chunk it would be in is
// decoded.
func (d *decodedChunks) find(namespace, kind, name string) (*Resource, bool) {
	c := d.c
	k := sort.Search(len(c.chunks), func(k int) bool {
		l := &c.chunks[k].last
		return cmp.Or(strings.Compare(l[0], namespace), strings.Compare(l[1], kind), strings.Compare(l[2], name)) >= 0
	})
	if k == len(c.chunks) {
		return nil, false
	}
	rs := d.get(k)
	j, found := findResource(rs, namespace, kind, name)
	if !found {
		return nil, false
	}
	return &rs[j], true
}

// inFiles is the indexes, in order, of the resources of the files in; only the chunks that
// name one of them are decoded (by get).
func (c *compactResources) inFiles(in map[string]bool, get func(k int) []Resource) []int {
	out := []int{}
	for k := range c.chunks {
		ch := &c.chunks[k]
		if !slices.ContainsFunc(ch.strs, func(s string) bool { return in[s] }) {
			continue
		}
		lo, _ := c.part(k)
		out = appendInFiles(out, get(k), lo, in)
	}
	return out
}

// namespaces is the resources' namespaces, sorted, each once.
func (c *compactResources) namespaces() []string {
	seen := map[string]bool{}
	out := []string{}
	for k := range c.chunks {
		for _, ns := range c.chunks[k].nss {
			if !seen[ns] {
				seen[ns] = true
				out = append(out, ns)
			}
		}
	}
	slices.Sort(out)
	return out
}

// merge is c without the resources at gone (sorted indexes), with made merged in (sorted by
// namespace, kind and name, none of the identities of c but gone's), as mergeResources
// merges decoded resources. The chunks neither touches are shared with c; the others are
// decoded (by get), merged and encoded again (in chunks of at most 2×packChunk), and dropped
// once empty; warm holds the resources of up to maxKeptChunks of them by their index in the
// result, as decoding them would give. false when a resource cannot be encoded.
func (c *compactResources) merge(gone []int, made []Resource, get func(k int) []Resource) (_ *compactResources, warm map[int][]Resource, ok bool) {
	out := &compactResources{chunks: make([]compactChunk, 0, len(c.chunks)+1)}
	warm = map[int][]Resource{}
	// add encodes rs as chunks of at most 2×packChunk.
	add := func(rs []Resource) bool {
		for len(rs) > 0 {
			part := rs
			if len(part) > 2*packChunk {
				part = rs[:packChunk]
			}
			var nc compactChunk
			if !nc.encode(part) {
				return false
			}
			if len(warm) < maxKeptChunks {
				warm[len(out.chunks)] = part[:len(part):len(part)]
			}
			out.chunks = append(out.chunks, nc)
			rs = rs[len(part):]
		}
		return true
	}
	g, m := 0, 0
	for k := range c.chunks {
		ch := &c.chunks[k]
		lo, hi := c.part(k)
		g0, m0 := g, m
		for g < len(gone) && gone[g] < hi {
			g++
		}
		// A resource goes in the first chunk whose last identity is not before its own.
		for m < len(made) && (k == len(c.chunks)-1 || cmp.Or(strings.Compare(made[m].Namespace, ch.last[0]),
			strings.Compare(made[m].Kind, ch.last[1]), strings.Compare(made[m].Name, ch.last[2])) <= 0) {
			m++
		}
		if g == g0 && m == m0 {
			out.chunks = append(out.chunks, *ch)
			continue
		}
		local := make([]int, g-g0)
		for j, at := range gone[g0:g] {
			local[j] = at - lo
		}
		if !add(mergeResources(get(k), local, made[m0:m], false)) {
			return nil, nil, false
		}
	}
	if len(c.chunks) == 0 && !add(made) {
		return nil, nil, false
	}
	out.index()
	return out, warm, true
}
