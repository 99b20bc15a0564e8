// Package render turns a revision's files into manifests with kustomize (sigs.k8s.io/kustomize/api,
// in process) before the loader reads them: `render: kustomize` on a source. It reads only the
// revision's files: a pre-check refuses every kustomization that would reach further (remote
// bases, URLs, absolute paths, paths out of the source's path, Helm, exec and KRM-function
// plugins, encrypted files), since kustomize itself clones and fetches what it cannot find.
package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

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
			out, err := t.build(gctx, r, checks[i].read, limit)
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
// found it reads.
func (t *tree) build(ctx context.Context, dir string, read map[string]bool, limit int) ([]sources.File, error) {
	kfile := t.kustomization(dir)
	fs := filesys.MakeFsInMemory()
	for p := range read {
		data := t.files[p].Data
		if p == kfile {
			var err error
			if data, err = withOrigins(data); err != nil {
				return nil, errorAt(kfile, "%v", err)
			}
		}
		if err := fs.WriteFile(srcDir+"/"+p, data); err != nil {
			return nil, errorAt(kfile, "%v", err)
		}
	}

	type result struct {
		m   resmap.ResMap
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
		runs.Add(1)
		m, err := krusty.MakeKustomizer(options()).Run(fs, srcDir+"/"+dir)
		done <- result{m, err}
	}()
	var res result
	select {
	case <-ctx.Done():
		return nil, interrupted(ctx, kfile)
	case res = <-done:
	}
	if res.err != nil {
		return nil, errorAt(kfile, "kustomize: %s", stripSrc(res.err.Error()))
	}
	if n := res.m.Size(); n > limit {
		return nil, errorAt(kfile, "%d resources, more than the limit of %d per kustomization (render.kustomize.maxResources); split it into several kustomizations", n, limit)
	}
	return t.output(dir, kfile, res.m)
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
	o := krusty.MakeDefaultOptions() // builtin plugins only, load restrictor on, no Helm
	o.PluginConfig = types.DisabledPluginConfig()
	o.LoadRestrictions = types.LoadRestrictionsRootOnly
	return o
}

// withOrigins asks kustomize to annotate each output with the file it came from.
func withOrigins(data []byte) ([]byte, error) {
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, err
	}
	if k == nil {
		k = map[string]any{}
	}
	bm, _ := k["buildMetadata"].([]any)
	if !slices.Contains(bm, any(types.OriginAnnotations)) {
		k["buildMetadata"] = append(bm, types.OriginAnnotations)
	}
	return yaml.Marshal(k)
}

// output groups the rendered resources by origin file, in the order they come, as one
// multi-document file each.
func (t *tree) output(dir, kfile string, m resmap.ResMap) ([]sources.File, error) {
	var order []string
	docs := map[string][]byte{}
	for _, r := range m.Resources() {
		origin, err := r.GetOrigin()
		if err != nil {
			return nil, errorAt(kfile, "%v", err)
		}
		from := kfile
		switch {
		case origin == nil:
		case origin.Path != "":
			from = path.Join(dir, origin.Path)
		case origin.ConfiguredIn != "":
			from = path.Join(dir, origin.ConfiguredIn)
		}
		if _, ok := docs[from]; !ok {
			order = append(order, from)
		} else {
			docs[from] = append(docs[from], "---\n"...)
		}
		if err := stripBuildAnnotations(r); err != nil {
			return nil, errorAt(kfile, "%v", err)
		}
		y, err := r.AsYAML()
		if err != nil {
			return nil, errorAt(kfile, "%v", err)
		}
		docs[from] = append(docs[from], y...)
	}
	out := make([]sources.File, len(order))
	for i, p := range order {
		sum := sha256.Sum256(docs[p])
		out[i] = sources.File{Path: p, Hash: "rendered:" + hex.EncodeToString(sum[:]), Data: docs[p], RenderedBy: kfile}
	}
	return out, nil
}

// buildAnnotations are the annotations kustomize adds for buildMetadata; they are not part of
// the resource.
var buildAnnotations = []string{"config.kubernetes.io/origin", "alpha.config.kubernetes.io/transformations"}

func stripBuildAnnotations(r *resource.Resource) error {
	a := r.GetAnnotations()
	n := len(a)
	for _, k := range buildAnnotations {
		delete(a, k)
	}
	if len(a) == n {
		return nil
	}
	return r.SetAnnotations(a)
}
