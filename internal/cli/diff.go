package cli

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/trueup-dev/trueup/internal/apiclient"
	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/internal/sealed"
	"github.com/trueup-dev/trueup/internal/wire"
	"github.com/trueup-dev/trueup/sources"
)

// diffContext is the number of unchanged lines around each change in a spec diff.
const diffContext = 3

// lookupWorkers bounds the concurrent API calls that look for identity conflicts.
const lookupWorkers = 8

// change is one line of the plan, with the diff lines printed under it.
type change struct {
	op    byte   // '+', '~', '-'
	id    string // Kind/namespace/name or ResourceType/name
	where string // file:line
	note  string
	diff  []string
	order int // types before resources
}

// DiffPlan is what applying DIR would do: what `trueup diff` prints.
type DiffPlan struct {
	source    wire.Source
	changes   []change
	invalid   manifest.Errors
	unchanged int // resources
	// typesCompared: DIR declares types, so the source's are compared and counted apart.
	typesCompared  bool
	unchangedTypes int
	notes          []string
}

// Changed reports whether applying DIR would change something, or DIR is invalid.
func (p *DiffPlan) Changed() bool { return len(p.changes) > 0 || len(p.invalid) > 0 }

// Diff loads the manifests folder dir as a sync of source sourceName would and compares it
// with what the API shows of that source. kustomize (folders relative to dir) or, without it,
// the render block of the source in cfg (nil: none) renders dir first.
func Diff(ctx context.Context, c *apiclient.Client, dir, sourceName string, kustomize []string, cfg *config.Config) (*DiffPlan, error) {
	p := &DiffPlan{}
	if err := c.Get(ctx, "/api/v1/sources/"+url.PathEscape(sourceName), nil, &p.source); err != nil {
		return nil, err
	}
	var types struct {
		Items []wire.ResourceType `json:"items"`
	}
	if err := c.Get(ctx, "/api/v1/resourcetypes", nil, &types); err != nil {
		return nil, err
	}
	known, err := knownTypes(types.Items, "")
	if err != nil {
		return nil, err
	}
	prefix := sourcePrefix(p.source.Path)
	renderFn, err := render.ForCLI(prefix, kustomize, cfg, sourceName)
	if err != nil {
		return nil, err
	}
	read := manifest.ReadDir
	if renderFn != nil {
		read = manifest.ReadDirAll
	}
	files, err := read(dir, prefix)
	if err != nil {
		return nil, err
	}
	var inputFiles []sources.File // the files as read, when a render replaces them
	if renderFn != nil {
		inputFiles = files
		if files, err = renderFn(ctx, files); err != nil {
			if problems, ok := render.Problems(err); ok {
				p.invalid = problems
				return p, nil
			}
			return nil, err
		}
	}
	// The source's resources are needed once DIR loads, and before that only to tell
	// whether DIR lies above the folder the source reads: an invalid DIR costs no listing.
	var live []wire.Resource
	listed := false
	list := func() error {
		raw, err := c.ListResources(ctx, url.Values{"source": {sourceName}}, 1000)
		if err != nil {
			return err
		}
		live, err = apiclient.DecodeItems[wire.Resource](raw)
		listed = true
		return err
	}
	if inner := innerFolders(dir, prefix); len(inner) > 0 {
		if err := list(); err != nil {
			return nil, err
		}
		note, err := aboveSource(dir, prefix, inner, files, appliedPaths(live, types.Items, sourceName), sourceName)
		if err != nil {
			return nil, err
		}
		if note != "" {
			p.notes = append(p.notes, note)
		}
	}
	keys, err := EnvKeys()
	if err != nil {
		return nil, err
	}
	loader, opener := manifest.NewLoader(), sealed.NewOpener(keys)
	set, err := sealed.Load(loader, opener, files, manifest.Options{KnownTypes: known, InputFiles: inputFiles}, nil)
	if err == nil && len(set.Types) > 0 {
		// DIR is a whole source: load it again as its sync would, without its own stored types.
		others, kerr := knownTypes(types.Items, sourceName)
		if kerr != nil {
			return nil, kerr
		}
		set, err = sealed.Load(loader, opener, files, manifest.Options{KnownTypes: others, InputFiles: inputFiles}, nil)
	}
	if errors.As(err, &p.invalid) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}

	if !listed {
		if err := list(); err != nil {
			return nil, err
		}
	}
	p.diffTypes(set, types.Items)
	added, err := p.diffResources(dir, set, live, p.source.Prune, len(files) == 0)
	if err != nil {
		return nil, err
	}
	if err := p.conflicts(ctx, c, added); err != nil {
		return nil, err
	}
	slices.SortFunc(p.changes, func(a, b change) int {
		return cmp.Or(cmp.Compare(a.order, b.order), cmp.Compare(a.id, b.id))
	})
	return p, nil
}

// sourcePrefix is a source's configured path as its Git source cleans it, "" for the
// repository root (or a source without one).
func sourcePrefix(p string) string {
	clean := path.Clean(strings.ReplaceAll(p, "\\", "/"))
	if p == "" || clean == "." || clean == "/" {
		return ""
	}
	return strings.TrimPrefix(clean, "/")
}

// innerFolders lists the trailing parts of prefix that are folders of DIR, longest first:
// the folder the source reads, were DIR above it. For path deploy/manifests, DIR/deploy/manifests
// exists when DIR is the repository root and DIR/manifests when DIR is deploy.
func innerFolders(dir, prefix string) []string {
	if prefix == "" {
		return nil
	}
	var out []string
	parts := strings.Split(prefix, "/")
	for i := range parts {
		rest := strings.Join(parts[i:], "/")
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rest))); err == nil && fi.IsDir() {
			out = append(out, rest)
		}
	}
	return out
}

// appliedPaths is where the source's live resources and types lie, as the server names them.
func appliedPaths(live []wire.Resource, types []wire.ResourceType, source string) map[string]bool {
	applied := map[string]bool{}
	for _, r := range live {
		applied[r.Source.Path] = true
	}
	for _, t := range types {
		if t.Source == source {
			applied[t.Path] = true
		}
	}
	return applied
}

// aboveSource tells whether DIR lies above the folder the source reads (the repository root
// given for path: manifests), which holds the folders inner. When none of DIR's files lies
// where the source applied its files and some lie one inner folder deeper (DIR's
// manifests/x.yaml, named manifests/manifests/x.yaml, where the source applied
// manifests/x.yaml), it is an error naming the folder to pass. When the applied files cannot
// tell (the source applied nothing yet, or DIR's files lie at both places), it is a note.
// A source's folder that holds a folder named like an inner one keeps its files where they
// were applied, so it gets neither.
func aboveSource(dir, prefix string, inner []string, files []sources.File, applied map[string]bool, source string) (note string, err error) {
	hits := false
	for _, f := range files {
		if applied[f.Path] {
			hits = true
			break
		}
	}
	deeper := ""
	for _, rest := range inner {
		if slices.ContainsFunc(files, func(f sources.File) bool {
			x, ok := strings.CutPrefix(f.Path, prefix+"/"+rest+"/")
			return ok && applied[prefix+"/"+x]
		}) {
			deeper = rest
			break
		}
	}
	switch {
	case deeper != "" && !hits:
		return "", fmt.Errorf("%s holds the folder source %s reads (path %s): pass %s as DIR",
			dir, source, prefix, filepath.Join(dir, filepath.FromSlash(deeper)))
	case deeper == "" && hits:
		return "", nil // DIR is the source's folder
	}
	folder := cmp.Or(deeper, inner[0])
	return fmt.Sprintf("note: %s holds %s/, named like the folder source %s reads (path %s); if that is the folder, pass %s as DIR",
		dir, folder, source, prefix, filepath.Join(dir, filepath.FromSlash(folder))), nil
}

// knownTypes turns the server's types into the loader's, leaving out those of source skip.
func knownTypes(all []wire.ResourceType, skip string) ([]manifest.ResourceType, error) {
	var out []manifest.ResourceType
	for _, t := range all {
		if skip != "" && t.Source == skip {
			continue
		}
		mt, err := manifest.TypeFromSpec(t.Name, t.Group, t.Path, t.Spec)
		if err != nil {
			return nil, fmt.Errorf("from the API: %w", err)
		}
		out = append(out, mt)
	}
	return out, nil
}

// conflicts asks the API whether another source already declares an added resource, which
// would reject the revision as a sync does.
func (p *DiffPlan) conflicts(ctx context.Context, c *apiclient.Client, added []*manifest.Resource) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan *manifest.Resource)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range min(lookupWorkers, len(added)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				var other wire.Resource
				err := c.Get(ctx, apiclient.ResourcePath(r.Namespace, r.Kind, r.Name), nil, &other)
				mu.Lock()
				switch {
				case err == nil && other.Source.Name != p.source.Name:
					p.invalid = append(p.invalid, manifest.ValidationError{File: r.File, Line: r.Line, Path: "metadata.name",
						Msg: fmt.Sprintf("%s %s/%s is already declared by source %s (%s)", r.Kind, r.Namespace, r.Name, other.Source.Name, other.Source.Path)})
				case err != nil && !apiclient.IsNotFound(err) && firstErr == nil:
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	for _, r := range added {
		select {
		case work <- r:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	slices.SortFunc(p.invalid, func(a, b manifest.ValidationError) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return nil
}

// Print writes the plan as `trueup diff` shows it.
func (p *DiffPlan) Print(w io.Writer) error {
	var b bytes.Buffer
	if len(p.invalid) > 0 {
		for _, e := range p.invalid {
			fmt.Fprintf(&b, "! invalid %s\n", e.Error())
		}
		for _, n := range p.notes {
			b.WriteString(n + "\n")
		}
		fmt.Fprintf(&b, "%d invalid: the revision would be rejected and source %s would keep %s\n",
			len(p.invalid), p.source.Name, revLabel(p.source.Name, p.source.Revision))
		_, err := b.WriteTo(w)
		return err
	}
	counts, typeCounts := map[byte]int{}, map[byte]int{}
	for _, c := range p.changes {
		if c.order == 0 {
			typeCounts[c.op]++
		} else {
			counts[c.op]++
		}
		line := fmt.Sprintf("%c %s", c.op, c.id)
		if c.where != "" {
			line += "  " + c.where
		}
		if c.note != "" {
			line += "  (" + c.note + ")"
		}
		b.WriteString(line + "\n")
		for _, d := range c.diff {
			b.WriteString(strings.TrimRight("    "+d, " ") + "\n")
		}
	}
	for _, n := range p.notes {
		b.WriteString(n + "\n")
	}
	// Types are counted apart from resources: "7 unchanged" of 5 resources and 2 types
	// reads as 7 resources. The types' clause is left out when DIR holds resources only.
	fmt.Fprintf(&b, "%s: resources: %d to add, %d to change, %d to remove, %d unchanged",
		revLabel(p.source.Name, p.source.Revision), counts['+'], counts['~'], counts['-'], p.unchanged)
	if p.typesCompared || len(typeCounts) > 0 {
		fmt.Fprintf(&b, "; types: %d to add, %d to change, %d to remove, %d unchanged",
			typeCounts['+'], typeCounts['~'], typeCounts['-'], p.unchangedTypes)
	}
	b.WriteString("\n")
	_, err := b.WriteTo(w)
	return err
}
