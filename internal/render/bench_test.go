package render

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/cputime"
	"github.com/trueup-dev/trueup/sources"
)

// BenchmarkKustomize10k renders 10,000 resources as 100 overlays of 100 each (the shape of
// the bench's sync_first_10k_kustomize).
func BenchmarkKustomize10k(b *testing.B) {
	var files []sources.File
	for f := range 100 {
		var w strings.Builder
		for i := f * 100; i < (f+1)*100; i++ {
			fmt.Fprintf(&w, "---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: w%06d, namespace: ns%02d, labels: {team: t%d}}\nspec: {size: %d}\n", i, i%20, i%7, i)
		}
		base := fmt.Sprintf("base/t%02d", f)
		files = append(files,
			sources.File{Path: base + "/widgets.yaml", Data: []byte(w.String())},
			sources.File{Path: base + "/kustomization.yaml", Data: []byte("resources: [widgets.yaml]\n")},
			sources.File{Path: fmt.Sprintf("overlays/prod/t%02d/kustomization.yaml", f), Data: []byte("resources: [../../../" + base + "]\nnamePrefix: prod-\n" +
				"labels: [{pairs: {env: prod}}]\npatches:\n" +
				fmt.Sprintf("  - target: {kind: Widget, name: w%04d00}\n    patch: |-\n      - {op: replace, path: /spec/size, value: 1}\n", f))})
	}
	b.ResetTimer()
	start := cputime.Self()
	for range b.N {
		out, err := Kustomize(context.Background(), files, Options{Paths: []string{"overlays/prod/*"}})
		if err != nil || len(out) != 100 {
			b.Fatal(len(out), err)
		}
	}
	// On a shared machine the CPU time says more than the wall time.
	b.ReportMetric((cputime.Self()-start).Seconds()/float64(b.N), "cpu-s/op")
}
