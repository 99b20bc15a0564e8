// Package render turns a revision's files into manifests with kustomize (sigs.k8s.io/kustomize/api,
// in process) before the loader reads them: `render: kustomize` on a source. It reads only the
// revision's files: a pre-check refuses every kustomization that would reach further (remote
// bases, URLs, absolute paths, paths out of the source's path, Helm, exec and KRM-function
// plugins, encrypted files), since kustomize itself clones and fetches what it cannot find.
package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/sources"
)

// DefaultMaxResources is Options.MaxResources when unset. kustomize's accumulation is
// quadratic in the resources of one kustomization (about 2 s for 2,000, minutes for 10,000):
// larger fleets are split into several kustomizations, which render in parallel.
const DefaultMaxResources = 2000

// DefaultTimeout bounds a render when Options.Timeout is unset.
const DefaultTimeout = time.Minute

// Options say what to render.
type Options struct {
	// Root is the source's path in the snapshot ("" or ".": its root). Kustomizations read
	// nothing outside it.
	Root string
	// Paths are the kustomization folders, relative to Root; an entry may hold `*` globs
	// (path.Match), matching every folder with a kustomization. Empty: Root itself.
	Paths []string
	// MaxResources caps the resources of one kustomization (0: DefaultMaxResources).
	MaxResources int
	// Timeout bounds the whole render (0: DefaultTimeout). kustomize cannot be cancelled:
	// when the time is up the render is given up and its result dropped, and the error is
	// not an *Error (the revision is not at fault: the sync is retried).
	Timeout time.Duration
	// Cache, when set, keeps each kustomization's output by the content of the files its
	// build reads: a revision renders again only the kustomizations whose files changed.
	Cache *Cache

	directs  *atomic.Int64 // tests: counts the builds made directly
	noDirect bool          // tests: no build made directly
}

// Cache holds the last output of each kustomization folder, keyed by the content it was
// built from. It may be shared by renders that run at the same time.
type Cache struct {
	mu      sync.Mutex
	entries map[string]cached
}

type cached struct {
	key   [sha256.Size]byte
	files []sources.File
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{entries: map[string]cached{}} }

// key identifies a build: the paths and data of the files it reads, and the cap.
func (t *tree) key(read map[string]bool, limit int) [sha256.Size]byte {
	paths := make([]string, 0, len(read))
	for p := range read {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", limit)
	for _, p := range paths {
		sum := sha256.Sum256(t.files[p].Data)
		fmt.Fprintf(h, "%s\x00%x\n", p, sum)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

const srcDir = "/src"

// Error is a render failure: a kustomization refused or failed to build.
type Error struct {
	// File is the kustomization at fault, as sources.File.Path ("" for a problem of the
	// configured paths).
	File string
	Msg  string
}

func (e *Error) Error() string {
	if e.File == "" {
		return e.Msg
	}
	return e.File + ": " + e.Msg
}

// Problems returns err as a revision's problems (one, at the kustomization) when it is a
// render failure: the syncer rejects the revision with them, a preview shows them.
func Problems(err error) (manifest.Errors, bool) {
	var e *Error
	if !errors.As(err, &e) {
		return nil, false
	}
	return manifest.Errors{{File: e.File, Msg: e.Msg}}, true
}

func errorAt(file, format string, args ...any) error {
	return &Error{File: file, Msg: fmt.Sprintf(format, args...)}
}

// Kustomize renders the kustomizations Options name from files (one revision's snapshot)
// and returns one file per origin file and kustomization: Path is the file the documents
// came from, RenderedBy the kustomization, Data the rendered documents. Files that no
// kustomization renders are not in the output. An error names the kustomization (and the
// entry) at fault.
func Kustomize(ctx context.Context, files []sources.File, opt Options) ([]sources.File, error) {
	t := newTree(files, opt.Root)
	t.directs, t.noDirect = opt.directs, opt.noDirect
	roots, err := t.roots(opt.Paths)
	if err != nil {
		return nil, err
	}
	limit := opt.MaxResources
	if limit <= 0 {
		limit = DefaultMaxResources
	}
	timeout := opt.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	openapiOnce.Do(initOpenAPI)

	// Every root is checked before any is built: a refusal costs no build.
	checks := make([]*check, len(roots))
	for i, r := range roots {
		c, err := t.check(r)
		if err != nil {
			return nil, err
		}
		if c.resources > limit {
			return nil, errorAt(t.kustomization(r), "about %d resources, more than the limit of %d per kustomization (render.kustomize.maxResources); split it into several kustomizations",
				c.resources, limit)
		}
		checks[i] = c
	}

	defer raiseGC()()
	outs := make([][]sources.File, len(roots))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, r := range roots {
		g.Go(func() error {
			var key [sha256.Size]byte
			if c := opt.Cache; c != nil {
				key = t.key(checks[i].read, limit)
				c.mu.Lock()
				e, ok := c.entries[r]
				c.mu.Unlock()
				if ok && e.key == key {
					outs[i] = e.files
					return nil
				}
			}
			out, err := t.build(gctx, r, checks[i], limit)
			if err == nil && opt.Cache != nil {
				opt.Cache.mu.Lock()
				opt.Cache.entries[r] = cached{key, out}
				opt.Cache.mu.Unlock()
			}
			outs[i] = out
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if c := opt.Cache; c != nil {
		// Folders no longer rendered leave the cache.
		c.mu.Lock()
		for r := range c.entries {
			if !slices.Contains(roots, r) {
				delete(c.entries, r)
			}
		}
		c.mu.Unlock()
	}
	return slices.Concat(outs...), nil
}

// roots expands the configured paths into kustomization folders, sorted and distinct.
func (t *tree) roots(paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		full := path.Join(t.root, p)
		if !strings.ContainsAny(p, "*?[") {
			if !seen[full] {
				seen[full] = true
				out = append(out, full)
			}
			continue
		}
		n := 0
		for d := range t.dirs {
			if ok, _ := path.Match(full, d); ok && t.kustomization(d) != "" {
				n++
				if !seen[d] {
					seen[d] = true
					out = append(out, d)
				}
			}
		}
		if n == 0 {
			return nil, errorAt("", "render.kustomize.paths: %q matches no folder with a kustomization", p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// build runs kustomize on the folder dir over an in-memory copy of the files the check
// found it reads, each resource marked with the file it comes from (originKey). The marks
// are written into the text of the documents; when kustomize fails on that copy, the build
// runs again with marks written through a YAML parser, whose result stands.
func (t *tree) build(ctx context.Context, dir string, c *check, limit int) ([]sources.File, error) {
	var ke *kustomizeError
	var ce *capError
	var pe *panicError
	if in := t.inline(dir, c); in != nil {
		out, err := t.buildMarked(ctx, dir, c, limit, markText, in)
		if err == nil || ctx.Err() != nil || errors.As(err, &ce) || errors.As(err, &pe) {
			return out, err
		}
	}
	out, err := t.buildMarked(ctx, dir, c, limit, markText, nil)
	if errors.As(err, &ke) {
		return t.buildMarked(ctx, dir, c, limit, markNodes, nil)
	}
	return out, err
}

// kustomizeError is a failure of kustomize itself (rather than of the cap or the deadline).
type kustomizeError struct{ error }

func (e *kustomizeError) Unwrap() error { return e.error }

// panicError is a build in which kustomize panicked: built again otherwise, it would panic
// again.
type panicError struct{ error }

func (e *panicError) Unwrap() error { return e.error }

// capError is a build with more resources than the limit.
type capError struct{ error }

func (e *capError) Unwrap() error { return e.error }

func (t *tree) buildMarked(ctx context.Context, dir string, c *check, limit int, mark func(data []byte, file string) []byte, in *inlining) ([]sources.File, error) {
	kfile := t.kustomization(dir)
	fs := filesys.MakeFsInMemory()
	marked := make(map[string][]byte, len(c.read))
	for p := range c.read {
		data := t.files[p].Data
		switch {
		case c.origins[p] && !c.other[p]:
			data = mark(data, p)
		case c.generating[p]:
			var err error
			if data, err = markGenerated(data, p); err != nil {
				return nil, errorAt(p, "%v", err)
			}
		}
		marked[p] = data
	}
	if in != nil {
		marked[kfile] = in.kustomization
		for to, from := range in.copies {
			marked[to] = marked[from]
		}
	}
	var direct *directBuild
	if !t.noDirect {
		direct = planDirect(dir, kfile, marked)
	}
	if direct == nil {
		if err := writeTree(fs, marked); err != nil {
			return nil, errorAt(kfile, "%v", err)
		}
	}

	type result struct {
		rs  []*resource.Resource
		err error
	}
	if ctx.Err() != nil {
		return nil, interrupted(ctx, kfile)
	}
	done := make(chan result, 1)
	go func() {
		// Run takes no context; when the deadline passes first the result is dropped. The
		// slot is held until Run returns, so builds given up on still count.
		select {
		case builds <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-builds }()
		if ctx.Err() != nil {
			return
		}
		// kustomize panics on some inputs (annotations that are not a mapping, build
		// annotations it cannot read back): the build fails, not the process.
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: &panicError{fmt.Errorf("kustomize stopped on an input it cannot handle (a panic in kustomize: %v)", p)}}
			}
		}()
		if direct != nil {
			if rs, ok := direct.build(); ok {
				if t.directs != nil {
					t.directs.Add(1)
				}
				done <- result{rs: rs}
				return
			}
			if ctx.Err() != nil {
				return
			}
			if err := writeTree(fs, marked); err != nil { // one run decides
				done <- result{err: err}
				return
			}
		}
		runs.Add(1)
		m, err := krusty.MakeKustomizer(optionsFor(marked[kfile])).Run(fs, srcDir+"/"+dir)
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{rs: m.Resources()}
	}()
	var res result
	select {
	case <-ctx.Done():
		return nil, interrupted(ctx, kfile)
	case res = <-done:
	}
	var pe *panicError
	if errors.As(res.err, &pe) {
		return nil, &panicError{errorAt(kfile, "%s", stripSrc(res.err.Error()))}
	}
	if res.err != nil {
		return nil, &kustomizeError{errorAt(kfile, "kustomize: %s", stripSrc(res.err.Error()))}
	}
	if n := len(res.rs); n > limit {
		return nil, &capError{errorAt(kfile, "%d resources, more than the limit of %d per kustomization (render.kustomize.maxResources); split it into several kustomizations", n, limit)}
	}
	return t.output(kfile, res.rs)
}

// writeTree writes files (revision paths) into the in-memory folder kustomize reads.
func writeTree(fs filesys.FileSystem, files map[string][]byte) error {
	for p, data := range files {
		if err := fs.WriteFile(srcDir+"/"+p, data); err != nil {
			return err
		}
	}
	return nil
}

// openapiOnce parses kustomize's builtin OpenAPI schema before any build: kyaml parses it
// lazily on first use, under a lock its readers do not take, so two first builds running at
// once race on its tables. The default schema is never reset afterwards (custom schemas are
// refused by the pre-check).
var openapiOnce sync.Once

func initOpenAPI() {
	openapi.SchemaForResourceType(kyaml.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"})
}

// builds bounds the kustomize builds running in the process, those given up on included.
var builds = make(chan struct{}, runtime.GOMAXPROCS(0))

// runs counts the kustomize builds started.
var runs atomic.Int64

// interrupted is the error of a build the render's deadline or cancellation stopped: not a
// problem of the revision (no *Error), so the sync is retried.
func interrupted(ctx context.Context, kfile string) error {
	return fmt.Errorf("%s: kustomize: %w", kfile, context.Cause(ctx))
}

// bareSrc is the in-memory folder named alone (the root of a source whose path is "."),
// between delimiters.
var bareSrc = regexp.MustCompile(`(^|[\s'"(\[:=])` + srcDir + `(/\.)?($|[\s'",:;)\]])`)

// stripSrc removes the in-memory folder from kustomize's messages: paths are the revision's.
func stripSrc(msg string) string {
	msg = bareSrc.ReplaceAllString(msg, "$1.$3")
	return strings.ReplaceAll(msg, srcDir+"/", "")
}

func options() *krusty.Options {
	o := krusty.MakeDefaultOptions() // builtin plugins only, load restrictor on, no Helm, no reordering
	o.PluginConfig = types.DisabledPluginConfig()
	o.LoadRestrictions = types.LoadRestrictionsRootOnly
	return o
}

// optionsFor are the options of a build of the kustomization data. One that sets
// sortOptions is built with the reordering left unspecified, which defers to it as "no
// reordering" does, without kustomize's warning on the process's output that a command-line
// flag is set too.
func optionsFor(data []byte) *krusty.Options {
	o := options()
	var k types.Kustomization
	if bytes.Contains(data, []byte("sortOptions")) && k.Unmarshal(data) == nil && k.SortOptions != nil {
		o.Reorder = krusty.ReorderOptionUnspecified
	}
	return o
}

// originKey is the top-level field that carries a resource's origin file through the build
// (kustomize's own origin annotations turn on its transformer annotations, which cost a
// sixth of a build). The output drops it.
const originKey = "render.trueup.dev/origin"

// markText appends originKey to each document of a manifest file, in its text: a line at
// the end of a block mapping, an entry at the start of a flow mapping (JSON). A file with
// a List goes through markNodes (the items need the mark).
func markText(data []byte, file string) []byte {
	if bytes.Contains(data, []byte("List")) && bytes.Contains(data, []byte("items")) {
		return markNodes(data, file)
	}
	val := strconv.Quote(file)
	out := make([]byte, 0, len(data)+64)
	rest := data
	for len(rest) > 0 {
		// One document: up to the next line starting with ---.
		end := len(rest)
		for i := 0; i < len(rest); {
			nl := bytes.IndexByte(rest[i:], '\n')
			if nl < 0 {
				break
			}
			i += nl + 1
			if marker(rest[i:]) {
				end = i
				break
			}
		}
		doc := rest[:end]
		rest = rest[end:]
		if marker(doc) {
			// The marker line itself goes out as it is.
			nl := bytes.IndexByte(doc, '\n')
			if nl < 0 {
				out = append(out, doc...)
				continue
			}
			out = append(out, doc[:nl+1]...)
			doc = doc[nl+1:]
		}
		first := firstContent(doc)
		switch {
		case first < 0: // empty or comments only
			out = append(out, doc...)
		case first > 0 && doc[first-1] != '\n' || !plainKey(doc[first]):
			// Not a block mapping at the margin, nor JSON: the text cannot be trusted.
			return markNodes(data, file)
		case doc[first] == '{':
			out = append(out, doc[:first+1]...)
			out = append(out, strconv.Quote(originKey)...)
			out = append(out, ": "...)
			out = append(out, val...)
			out = append(out, ", "...)
			out = append(out, doc[first+1:]...)
		default:
			out = append(out, doc...)
			if len(doc) > 0 && doc[len(doc)-1] != '\n' {
				out = append(out, '\n')
			}
			out = append(out, originKey+": "...)
			out = append(out, val...)
			out = append(out, '\n')
		}
	}
	return out
}

// plainKey reports whether c can start a document that markText marks: a mapping key
// (letters, digits, quotes) or a flow mapping.
func plainKey(c byte) bool {
	return c == '{' || c == '"' || c == '\'' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// marker reports whether b starts with a document marker line (---).
func marker(b []byte) bool {
	return bytes.HasPrefix(b, []byte("---")) && (len(b) == 3 || b[3] == '\n' || b[3] == '\r' || b[3] == ' ' || b[3] == '\t')
}

// firstContent is the offset of the first character of doc outside blank lines and
// comments, -1 when there is none.
func firstContent(doc []byte) int {
	for i := 0; i < len(doc); {
		line := doc[i:]
		if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
			line = line[:nl+1]
		}
		if t := bytes.TrimLeft(line, " \t\r\n"); len(t) > 0 && t[0] != '#' {
			return i + len(line) - len(t)
		}
		i += len(line)
	}
	return -1
}

// markNodes sets originKey in each document of a manifest file (and each item of a List)
// through a YAML parser. A file it cannot read goes to kustomize as it is, for its error.
func markNodes(data []byte, file string) []byte {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return data
		}
		if len(doc.Content) == 0 {
			continue // an empty document, which kustomize skips too
		}
		if m := doc.Content[0]; m.Kind == yaml.MappingNode {
			setOrigin(m, file)
			if k := field(m, "kind"); k != nil && strings.HasSuffix(k.Value, "List") {
				if items := field(m, "items"); items != nil && items.Kind == yaml.SequenceNode {
					for _, it := range items.Content {
						if it.Kind == yaml.MappingNode {
							setOrigin(it, file)
						}
					}
				}
			}
		}
		docs = append(docs, &doc)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return data
		}
	}
	if err := enc.Close(); err != nil {
		return data
	}
	return b.Bytes()
}

// setOrigin sets originKey in the mapping m.
func setOrigin(m *yaml.Node, file string) {
	if v := field(m, originKey); v != nil {
		v.Kind, v.Tag, v.Value, v.Style, v.Content = yaml.ScalarNode, "!!str", file, yaml.DoubleQuotedStyle, nil
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: originKey},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: file, Style: yaml.DoubleQuotedStyle})
}

// field returns the value of key in the mapping m, nil when it has none.
func field(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// markGenerated makes the ConfigMaps and Secrets a kustomization generates carry its path
// (generatorOptions.annotations; their name hash does not read annotations).
func markGenerated(data []byte, kfile string) ([]byte, error) {
	var k map[string]any
	if err := sigsyaml.Unmarshal(data, &k); err != nil {
		return nil, err
	}
	opts, _ := k["generatorOptions"].(map[string]any)
	if opts == nil {
		opts = map[string]any{}
	}
	ann, _ := opts["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
	}
	ann[originKey] = kfile
	opts["annotations"] = ann
	k["generatorOptions"] = opts
	return sigsyaml.Marshal(k)
}

// output groups the rendered resources by origin file, in the order they come, as one
// multi-document file each.
func (t *tree) output(kfile string, rs []*resource.Resource) ([]sources.File, error) {
	var order []string
	docs := map[string][]byte{}
	for _, r := range rs {
		from, err := takeOrigin(r)
		if err != nil {
			return nil, errorAt(kfile, "%v", err)
		}
		if from == "" {
			from = kfile // a resource no file holds (a builtin generator plugin's)
		}
		if _, ok := docs[from]; !ok {
			order = append(order, from)
		} else {
			docs[from] = append(docs[from], "---\n"...)
		}
		// JSON costs half of kyaml's YAML output, and the loader reads it with a JSON scanner
		// (one compact document a line): keep this shape.
		doc, ok := appendJSON(docs[from], r.YNode())
		if !ok {
			y, err := r.MarshalJSON()
			if err != nil {
				return nil, errorAt(kfile, "%v", err)
			}
			doc = append(docs[from], escapeForYAML(y)...)
		}
		docs[from] = append(doc, '\n')
	}
	out := make([]sources.File, len(order))
	for i, p := range order {
		sum := sha256.Sum256(docs[p])
		out[i] = sources.File{Path: p, Hash: "rendered:" + hex.EncodeToString(sum[:]), Data: docs[p], RenderedBy: kfile}
	}
	return out, nil
}

// buildAnnotations are the annotations kustomize adds for buildMetadata (a kustomization
// may ask for them); they are not part of the resource.
var buildAnnotations = []string{"config.kubernetes.io/origin", "alpha.config.kubernetes.io/transformations"}

// takeOrigin returns the origin file of r (originKey, a field or for generated resources an
// annotation; "" when it has none) and removes it and the build annotations from r.
func takeOrigin(r *resource.Resource) (string, error) {
	from := ""
	if v := r.Field(originKey); v != nil {
		from = v.Value.YNode().Value
		if _, err := r.Pipe(kyaml.Clear(originKey)); err != nil {
			return "", err
		}
	}
	meta := r.Field(kyaml.MetadataField)
	if meta == nil || meta.Value.YNode().Kind != kyaml.MappingNode {
		return from, nil
	}
	ann := meta.Value.Field(kyaml.AnnotationsField)
	if ann == nil || ann.Value.YNode().Kind != kyaml.MappingNode {
		return from, nil
	}
	n := len(ann.Value.YNode().Content)
	if v := ann.Value.Field(originKey); v != nil && from == "" {
		from = v.Value.YNode().Value // a generated ConfigMap or Secret (markGenerated)
	}
	for _, k := range append(buildAnnotations[:len(buildAnnotations):len(buildAnnotations)], originKey) {
		if _, err := ann.Value.Pipe(kyaml.Clear(k)); err != nil {
			return "", err
		}
	}
	if c := len(ann.Value.YNode().Content); c == 0 && n > 0 {
		if _, err := meta.Value.Pipe(kyaml.Clear(kyaml.AnnotationsField)); err != nil {
			return "", err
		}
	}
	return from, nil
}
