package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/cputime"
	"github.com/trueup-dev/trueup/internal/render"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

// kustomizeFleet lays the 10,000 widgets of sync_first_10k out as kustomize overlays: 100
// bases (base/tNN: one file of 100 widgets and its kustomization) and one prod overlay per
// base (overlays/prod/tNN: namePrefix, a label on every widget and a JSON patch of the
// base's first widget), plus the type
// in a kustomization of its own. kustomize's accumulation is quadratic in one
// kustomization's resources, so a fleet is many kustomizations rendered in parallel.
func kustomizeFleet() map[string]string {
	files := map[string]string{"types/kustomization.yaml": "resources: [widget.yaml]\n"}
	for p, d := range widgets(10000, 100, 0) {
		if p == "types/widget.yaml" {
			files["types/widget.yaml"] = d
			continue
		}
		n := strings.TrimSuffix(strings.TrimPrefix(p, "widgets/w"), ".yaml")
		files["base/t"+n+"/widgets.yaml"] = d
		files["base/t"+n+"/kustomization.yaml"] = "resources: [widgets.yaml]\n"
		files["overlays/prod/t"+n+"/kustomization.yaml"] = "resources: [../../../base/t" + n + "]\nnamePrefix: prod-\n" +
			"labels: [{pairs: {env: prod}}]\npatches:\n" +
			"  - target: {kind: Widget, name: w" + n + "00}\n    patch: |-\n      - {op: replace, path: /spec/size, value: 1}\n"
	}
	return files
}

var kustomizePaths = config.Kustomize{Paths: []string{"types", "overlays/prod/*"}}

// kustomizeFigures measures the render of the fleet alone (kustomize_render_10k) and a first
// sync of it from a Git source with render: kustomize (sync_first_10k_kustomize), against a
// first sync of the same widgets without overlays measured in the same run, and the
// process's CPU time in each.
func (b *bench) kustomizeFigures(ctx context.Context) error {
	fleet := kustomizeFleet()
	var files []sources.File
	for p, d := range fleet {
		files = append(files, sources.File{Path: p, Hash: p, Data: []byte(d)})
	}
	// Each render and the sync get a render function of their own: its cache would spare
	// the work measured.
	newRender := func() render.Func { return render.Kustomizations("", kustomizePaths, 10*time.Minute) }
	// The CPU time too: on a shared machine the wall time says more about the neighbours.
	var renders, cpu []time.Duration
	for range 3 {
		start, startCPU := time.Now(), cputime.Self()
		out, err := newRender()(ctx, files)
		if err != nil {
			return err
		}
		renders, cpu = append(renders, time.Since(start)), append(cpu, cputime.Self()-startCPU)
		if n := strings.Count(string(out[0].Data), `"kind":"Widget"`); n != 100 {
			return fmt.Errorf("an overlay rendered %d widgets", n)
		}
	}
	record("kustomize_render_10k", percentile(renders, 0.5).Seconds(), "s", "informational", nil)
	record("kustomize_render_10k_cpu", percentile(cpu, 0.5).Seconds(), "s", "informational", nil)

	// One kustomization of 4,000 widgets: built directly, linear in its resources (one
	// kustomize run would check each against all before it).
	big := []sources.File{
		{Path: "big/kustomization.yaml", Hash: "k", Data: []byte("resources: [widgets.yaml]\nnamePrefix: prod-\nlabels: [{pairs: {env: prod}}]\n")},
		{Path: "big/widgets.yaml", Hash: "w", Data: []byte(widgets(4000, 4000, 0)["widgets/w0000.yaml"])},
	}
	start := time.Now()
	out, err := render.Kustomizations("", config.Kustomize{Paths: []string{"big"}, MaxResources: 4000}, 10*time.Minute)(ctx, big)
	if err != nil {
		return err
	}
	if n := strings.Count(string(out[0].Data), `"kind":"Widget"`); n != 4000 {
		return fmt.Errorf("one kustomization rendered %d widgets", n)
	}
	record("kustomize_render_one_4k", time.Since(start).Seconds(), "s", "informational", nil)

	plain := widgets(10000, 100, 0)
	base, baseCPU, err := b.firstSync(ctx, "repo10k-plain", plain, nil, nil)
	if err != nil {
		return err
	}
	// Then one base file changed: the cache renders its overlay alone.
	oneChange := func(s *syncer.Syncer, repo string) error {
		d, err := oneChanges(ctx, s, repo, "base/t0042/widgets.yaml", fleet["base/t0042/widgets.yaml"])
		record("sync_one_change_10k_kustomize", ms(d), "ms", "informational", nil)
		return err
	}
	rendered, renderedCPU, err := b.firstSync(ctx, "repo10k-kustomize", fleet, newRender(), oneChange)
	if err != nil {
		return err
	}
	// This process's CPU time in each sync (PostgreSQL and git-upload-pack aside, which run
	// in processes of their own): the neighbours' share of a shared machine is not in it.
	record("sync_first_10k_cpu", baseCPU.Seconds(), "s", "informational", nil)
	record("sync_first_10k_kustomize_cpu", renderedCPU.Seconds(), "s", "informational", nil)
	record("sync_first_10k_kustomize", rendered.Seconds(), "s", fmt.Sprintf("≤ 2 × sync_first_10k (%.2f s here)", base.Seconds()),
		atMost(2*base.Seconds()))
	return nil
}

// firstSync commits files to a fresh repository and times the first sync of a fresh store
// from it, rendered by fn when set; then runs after (when set) with the syncer.
func (b *bench) firstSync(ctx context.Context, name string, files map[string]string, fn render.Func,
	after func(s *syncer.Syncer, repo string) error) (took, cpu time.Duration, err error) {
	repo := filepath.Join(b.dir, name)
	if err := git(b.dir, "init", "-q", "-b", "main", repo); err != nil {
		return 0, 0, err
	}
	if err := writeFiles(repo, files); err != nil {
		return 0, 0, err
	}
	if err := git(repo, "add", "-A"); err != nil {
		return 0, 0, err
	}
	if err := git(repo, "commit", "-q", "-m", "10k"); err != nil {
		return 0, 0, err
	}
	st, _, err := b.freshStore(ctx, 4)
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	src, err := gitsource.New(gitsource.Config{Name: "bench", URL: repo, Branch: "main", Dir: filepath.Join(b.dir, "mirror-"+name), AllFiles: fn != nil}, b.log)
	if err != nil {
		return 0, 0, err
	}
	defer src.Close()
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "bench", URL: repo}); err != nil {
		return 0, 0, err
	}
	s := syncer.New(st, syncer.Options{Name: "bench", Source: src, Interval: time.Hour, Prune: true, Replica: "bench", Render: fn}, b.log)
	start, startCPU := time.Now(), cputime.Self()
	out, err := s.SyncOnce(ctx)
	if err != nil {
		return 0, 0, err
	}
	took, cpu = time.Since(start), cputime.Self()-startCPU
	if out.Result.Created != 10000 {
		return 0, 0, fmt.Errorf("first sync of %s created %d", name, out.Result.Created)
	}
	if after != nil {
		if err := after(s, repo); err != nil {
			return 0, 0, err
		}
	}
	return took, cpu, nil
}
