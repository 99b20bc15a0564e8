package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/trueup-dev/trueup/internal/graph"
	"github.com/trueup-dev/trueup/internal/manifest"
)

// graphIngest measures what ingest adds for dependencies (graph_ingest_100k): for 100,000
// resources with 3 dependencies each (one dependsOn entry, two output references in the
// spec), the per-resource Dependencies from the spec, the graph's nodes and the cycle
// check. Resource i depends on i+1..i+3, a DAG; the resources are built untimed. Needs no
// database.
func graphIngest() error {
	const n = 100_000
	ids := make([]graph.ID, n+3)
	for i := range ids {
		ids[i] = graph.ID{Kind: "Widget", Namespace: fmt.Sprintf("team-%d", i%100), Name: fmt.Sprintf("w-%d", i)}
	}
	resources := make([]manifest.Resource, n)
	explicit := make([][]graph.ID, n)
	for i := range resources {
		spec, err := json.Marshal(map[string]any{
			"size":   i,
			"subnet": fmt.Sprintf("${{ Widget/%s/%s.outputs.subnetId }}", ids[i+1].Namespace, ids[i+1].Name),
			"url":    fmt.Sprintf("http://${{ Widget/%s/%s.outputs.db.host }}:5432/x", ids[i+2].Namespace, ids[i+2].Name),
		})
		if err != nil {
			return err
		}
		resources[i] = manifest.Resource{Kind: ids[i].Kind, Namespace: ids[i].Namespace, Name: ids[i].Name,
			Spec: spec, File: fmt.Sprintf("widgets/%d.yaml", i/100), Line: 1 + 6*(i%100)}
		explicit[i] = []graph.ID{ids[i+3]}
	}
	runs := make([]time.Duration, 3)
	for r := range runs {
		start := time.Now()
		nodes := make([]manifest.GraphNode, n)
		for i := range resources {
			res := &resources[i]
			self := graph.ID{Kind: res.Kind, Namespace: res.Namespace, Name: res.Name}
			deps, err := manifest.Dependencies(self, explicit[i], res.Spec)
			if err != nil {
				return err
			}
			if len(deps) != 3 {
				return fmt.Errorf("resource %d: %d dependencies, want 3", i, len(deps))
			}
			res.DependsOn = deps
			targets := make([]graph.ID, len(deps))
			for j, d := range deps {
				targets[j] = d.Target
			}
			nodes[i] = manifest.GraphNode{ID: self, File: res.File, Line: res.Line, Deps: targets}
		}
		if errs := manifest.CycleErrors(nodes); errs != nil {
			return fmt.Errorf("a DAG has cycles: %v", errs[0])
		}
		runs[r] = time.Since(start)
	}
	slices.Sort(runs)
	record("graph_ingest_100k", ms(runs[len(runs)/2]), "ms", "≤ 1000", atMost(1000))
	return nil
}
