// Package manifest parses and validates ResourceType and Resource manifests (DESIGN §4): it
// turns the YAML and JSON files of one source revision into a Set of types and resources,
// with schema defaults applied and content hashes computed, or into Errors that list every
// problem as file:line: path: message. A revision applies wholly or not at all, so Load
// returns either a complete Set or no Set.
package manifest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// ResourceType documents are told apart by these; their group is reserved.
const (
	typeGroup      = "trueup.dev"
	typeAPIVersion = typeGroup + "/v1"
	typeKind       = "ResourceType"
)

// ValidationError is one problem in one manifest.
type ValidationError struct {
	File string // slash-separated path relative to the source root
	Line int    // 1-based; 0 when the problem concerns the whole file
	Path string // dotted path of the offending field, e.g. spec.versions[0].schema; may be empty
	Msg  string
	// Origin says where in File the document came from when File alone does not: the
	// ResourceSet input a generated resource was rendered from ("tenant=acme,
	// region=us-east-1", or "inputs[3]" when the name reads no input), or the kustomization
	// that rendered the file ("rendered by overlays/prod/kustomization.yaml"). Empty for a
	// written document.
	Origin string

	set *setDoc // the ResourceSet that generated the document, until capSetProblems
}

// Error formats the problem as "file:line (origin): path: msg", leaving out the parts that
// are unknown.
func (e ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(e.place())
	if b.Len() > 0 {
		b.WriteString(": ") // a problem of the whole revision names no file
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// place is "file:line (origin)", leaving out the parts that are unknown.
func (e ValidationError) place() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Origin != "" {
		b.WriteString(" (")
		b.WriteString(e.Origin)
		b.WriteByte(')')
	}
	return b.String()
}

// Errors is every problem found in a revision, sorted by File, Line and Path.
type Errors []ValidationError

// Error lists the problems one per line.
func (e Errors) Error() string {
	lines := make([]string, len(e))
	for i, ve := range e {
		lines[i] = ve.Error()
	}
	return strings.Join(lines, "\n")
}

// SortErrors orders problems as Load returns them and drops exact repeats.
func SortErrors(errs Errors) Errors { return sortErrors(errs) }

// sortErrors orders problems the way a reader scans files and drops exact repeats, which
// appear when a schema reports the same violation through several keywords.
func sortErrors(errs Errors) Errors {
	slices.SortFunc(errs, func(a, b ValidationError) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Origin, b.Origin),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Msg, b.Msg),
		)
	})
	return slices.Compact(errs)
}

// Version is one served version of a ResourceType.
type Version struct {
	Name   string
	Schema json.RawMessage // canonical JSON Schema of the resources' .spec
}

// ActionRef names the action instance that reconciles a type's resources.
type ActionRef struct {
	Name string
	With json.RawMessage // canonical JSON object; nil when absent or null
}

// ResourceType is a validated ResourceType manifest.
type ResourceType struct {
	Name        string // the kind resources use, e.g. "DatabaseCluster"
	Group       string
	Description string
	Versions    []Version
	Action      ActionRef
	// ResyncInterval is nil when absent; 0 turns the drift check off.
	ResyncInterval *time.Duration
	// Drift is spec.drift: what a resync that finds drift does (nil: remediate, nothing
	// ignored).
	Drift *DriftPolicy
	Spec  json.RawMessage // canonical JSON of the whole spec, as written
	Hash  string          // hex sha256 of canonical {name, spec}
	File  string
	Line  int // where the document starts
}

// Drift modes of a ResourceType (spec.drift.mode).
const (
	// DriftRemediate corrects drift at once: a Reconcile follows the Observe that found it.
	DriftRemediate = "remediate"
	// DriftDetect sets Drifted=True with what drifted and calls nothing: an operator's
	// reconcile or a new generation corrects it.
	DriftDetect = "detect"
	// DriftNotify is DriftDetect that also sends the Drifted notification.
	DriftNotify = "notify"
)

// DriftPolicy is a ResourceType's spec.drift.
type DriftPolicy struct {
	Mode string `json:"mode"` // remediate (default), detect or notify
	// Ignore are JSON pointers into the spec ("/tags"): drift at or below them never counts.
	Ignore []string `json:"ignore,omitempty"`
}

// Resource is a validated Resource manifest. Resources of one Set with the same labels (or
// annotations) share one map: read them, never change them. Spec's bytes are shared with
// the Loader's cache and the later Sets it builds: replace a Spec (a new slice), never write
// into it (copy, json.Unmarshal into &Spec); a full load checks again a spec written into.
type Resource struct {
	APIVersion  string
	Kind        string
	Namespace   string // "default" when absent
	Name        string
	Labels      map[string]string // never nil
	Annotations map[string]string // never nil
	Spec        json.RawMessage   // canonical JSON with schema defaults applied; "{}" when absent
	SpecHash    string            // hex sha256 of Spec
	MetaHash    string            // hex sha256 of canonical {apiVersion, labels, annotations, file[, dependsOn]}
	// Sealed is the SOPS-encrypted file the resource came from, when its spec has encrypted
	// fields (internal/sealed): Spec then holds markers in their place.
	Sealed string
	// DependsOn is what the resource waits for (dependsOn entries and output references),
	// sorted by Target.Key(), one entry per target; nil when none.
	DependsOn []Dependency
	File      string
	Line      int

	gen        *genRef // set when a ResourceSet generated it
	fileOrigin string  // its file's ValidationError.Origin: "rendered by …" for a rendered file
}

// origin is the resource's ValidationError.Origin.
func (r *Resource) origin() string {
	return joinOrigin(r.fileOrigin, r.gen)
}

// Set is the validated content of one revision. Types holds only the types declared in the
// loaded files (not Options.KnownTypes), sorted by Name; Resources is sorted by Namespace,
// Kind and Name.
type Set struct {
	Types []ResourceType
	// Resources is nil when the Set holds them encoded (Packed): read them through Len and
	// At, which serve either form.
	Resources []Resource
	// ResourceSets lists the revision's ResourceSets, sorted by Namespace and Name; their
	// generated resources are in Resources, labelled LabelResourceSet.
	ResourceSets []ResourceSetInfo
	// Files maps the path of each file loaded to its content's hash (sources.File.Hash, or
	// one the loader made): a resource is the same while its file is (the store then skips
	// it, changeplan.ChangedFiles). nil when a resource also depends on other files: a
	// ResourceSet's generated resources depend on its inputs.
	Files map[string]string

	// packed holds the resources, encoded, instead of Resources (Options.Packed); chunk is
	// the chunk At decoded last.
	packed *compactResources
	chunk  atomic.Pointer[decodedChunk]
	// warm holds chunks of packed decoded, by index (read only): those a load from a packed
	// basis merged its change into, which the caller reads first.
	warm map[int][]Resource

	transitions []transitionCheck // the resources CheckTransitions checks
	// encryptedUnknown is the Options.EncryptedUnknown the Set was loaded with.
	encryptedUnknown bool
}

// decodedChunk is a chunk of a packed Set decoded: the resources from index lo.
type decodedChunk struct {
	lo int
	rs []Resource
}

// Len is how many resources s holds.
func (s *Set) Len() int {
	if s.packed != nil {
		return s.packed.n
	}
	return len(s.Resources)
}

// At is s's resource i (0 ≤ i < Len), to read, never to change. Of a packed Set it is
// decoded with the chunk of resources around it (a few thousand), which the Set keeps until
// a resource of another chunk is asked for: a walk in index order decodes each chunk once.
// The resource lives as long as the caller keeps it. At is safe for concurrent use, but
// readers of different chunks at once decode a chunk at nearly every call: a walk beside
// others should use All, which decodes apart.
func (s *Set) At(i int) *Resource {
	if s.packed == nil {
		return &s.Resources[i]
	}
	d := s.chunk.Load()
	if d == nil || i < d.lo || i >= d.lo+len(d.rs) {
		k := s.packed.chunkOf(i)
		d = &decodedChunk{lo: s.packed.offs[k], rs: s.decodedChunk(k)}
		s.chunk.Store(d)
	}
	return &d.rs[i-d.lo]
}

// decodedChunk is chunk k of packed decoded: warm's, or decoded now.
func (s *Set) decodedChunk(k int) []Resource {
	if rs, ok := s.warm[k]; ok {
		return rs
	}
	return s.packed.chunks[k].decoded()
}

// Namespaces is the namespaces of s's resources, sorted, each once (empty, not nil, for
// none); a packed Set answers without decoding.
func (s *Set) Namespaces() []string {
	if s.packed != nil {
		return s.packed.namespaces()
	}
	out := []string{}
	for i := range s.Resources {
		// Sorted by namespace first: neighbours share theirs.
		if ns := s.Resources[i].Namespace; len(out) == 0 || out[len(out)-1] != ns {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// InFiles is the indexes, in order, of s's resources of the files in (by path); of a packed
// Set, only the chunks that name one of the files are decoded.
func (s *Set) InFiles(in map[string]bool) []int {
	if s.packed != nil {
		return s.packed.inFiles(in, s.decodedChunk)
	}
	return appendInFiles([]int{}, s.Resources, 0, in)
}

// appendInFiles appends to out lo+j for each rs[j] of a file in in.
func appendInFiles(out []int, rs []Resource, lo int, in map[string]bool) []int {
	prev, was := "", false
	for j := range rs {
		// Neighbours often share a file: a map lookup per run of one file.
		if f := rs[j].File; j == 0 || f != prev {
			prev, was = f, in[f]
		}
		if was {
			out = append(out, lo+j)
		}
	}
	return out
}

// All yields s's resources with their indexes, in order, to read: a packed Set's decoded a
// chunk at a time, apart from At's.
func (s *Set) All() iter.Seq2[int, *Resource] {
	return func(yield func(int, *Resource) bool) {
		if s.packed == nil {
			for i := range s.Resources {
				if !yield(i, &s.Resources[i]) {
					return
				}
			}
			return
		}
		i := 0
		for r := range s.packed.each {
			if !yield(i, r) {
				return
			}
			i++
		}
	}
}

// HasDependencies reports whether a resource of s has dependencies; a packed Set answers
// without decoding.
func (s *Set) HasDependencies() bool {
	if s.packed != nil {
		return s.packed.deps()
	}
	for i := range s.Resources {
		if len(s.Resources[i].DependsOn) > 0 {
			return true
		}
	}
	return false
}

// Packed reports whether s holds its resources encoded (Options.Packed): Resources is nil.
func (s *Set) Packed() bool { return s.packed != nil }

// Canonical returns v as compact JSON with object keys sorted and numbers in one spelling
// (1.0 and 1 are both 1), so that equal values hash equally whatever their source format.
func Canonical(v json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonical json: trailing data after the value")
	}
	x, err := normalizeNumbers(x)
	if err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return marshalCanonical(x)
}

// marshalCanonical encodes a value built from map[string]any, []any, string, bool, nil and
// json.Number. encoding/json already sorts map keys; HTML escaping is turned off because it
// would make the stored spec differ from what users wrote for no benefit.
func marshalCanonical(v any) (json.RawMessage, error) {
	// Those values are spelled here without reflection, as encoding/json spells them: a
	// spec is encoded on every check, and a ResourceSet checks thousands at once.
	if b, ok := appendCanonical(nil, v, 0); ok {
		return b, nil
	}
	return encodeCanonical(v)
}

// encodeCanonical is marshalCanonical through encoding/json.
func encodeCanonical(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// appendCanonical appends v as marshalCanonical encodes it; ok is false for a value it
// leaves to encoding/json (another type, a number it would reject, too deep a tree).
func appendCanonical(dst []byte, v any, depth int) (_ []byte, ok bool) {
	if depth > maxDepth {
		return dst, false
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendJSONString(dst, x), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case json.Number:
		if !plainNumber(string(x)) {
			return dst, false
		}
		return append(dst, x...), true
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		var small [16]string
		keys := small[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if dst, ok = appendCanonical(dst, x[k], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendCanonical(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// plainNumber reports whether s is a JSON number that encoding/json writes as it is.
func plainNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return json.Valid([]byte(s))
}

func normalizeNumbers(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, e := range x {
			n, err := normalizeNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	case json.Number:
		return normalizeNumber(x)
	}
	return v, nil
}

// normalizeNumber keeps integer literals as written (they may exceed float64 precision) and
// respells everything else through float64.
func normalizeNumber(n json.Number) (json.Number, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if s == "-0" {
			return "0", nil
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", fmt.Errorf("number %s: %w", s, err)
	}
	return floatNumber(f)
}

// floatNumber spells a float the way encoding/json (and JavaScript) does: no exponent for
// ordinary magnitudes, so 2.0 is 2, and the shortest form that round-trips.
func floatNumber(f float64) (json.Number, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("%v cannot be represented in JSON", f)
	}
	if f == 0 {
		return "0", nil // also for -0
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 becomes 1e-7, as in encoding/json.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return json.Number(b), nil
}

// hashJSON is the hex sha256 used for every content hash in this package.
func hashJSON(b []byte) string { return hexHash(sha256.Sum256(b)) }

// HashJSON is the hex sha256 of b, spelled like every content hash of a Set.
func HashJSON(b []byte) string { return hashJSON(b) }

// hexHash spells a sha256 the way hashJSON does; the cache keeps sums, which take half the
// room, and spells them only for a Set.
func hexHash(sum [32]byte) string { return hex.EncodeToString(sum[:]) }

// specIntact says whether the cached spec still has the hash it was stored with (no Set's
// user wrote into it), without allocating: a full load asks it of every reused check.
func (r *resourceDoc) specIntact() bool {
	if r.specHash == "" {
		// Checked by a lean load (check), whose specs no Set shares: a lean load that
		// builds a Set drops its documents, and buildResources hashes a spec before sharing it.
		return true
	}
	sum := sha256.Sum256(r.specJSON)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:]) == r.specHash
}

// LabelResourceSet labels each resource a ResourceSet generates with the set's name (the set
// and its resources share a namespace). It is reserved: a written resource or a template may
// not set it.
const LabelResourceSet = "trueup.dev/resource-set"

// ResourceSetInfo is one ResourceSet of a revision (kind ResourceSet, group trueup.dev): what
// the store keeps to show the set and to tell two sources' sets apart.
type ResourceSetInfo struct {
	Namespace string
	Name      string
	File      string // slash-separated path of the set's file
	Line      int    // line of the set's document in File; 0 in a rendered file
	Inputs    int    // inputs after the matrix product (inputs × matrix combinations)
	Members   int    // resources generated
}
