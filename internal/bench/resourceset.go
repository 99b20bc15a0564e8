package main

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/sources"
)

// resourceSetExpand measures a ResourceSet at ingest (resourceset_expand_100k): a first Load
// of one set generating 100,000 Databases (1,000 tenants from an inputs file × a matrix of
// 100 regions), each depending on its region's Network by dependsOn and by an output
// reference, validated against its type's schema; then resourceset_reload_100k, a Load by
// the same Loader after an unrelated file changed. In memory; needs no database.
func resourceSetExpand() error {
	files := fleetFiles(1000, 100)
	opts := manifest.Options{Limits: manifest.Limits{MaxResourcesPerSet: 100_000}}
	load := func(l *manifest.Loader, fs []sources.File) (time.Duration, error) {
		start := time.Now()
		set, err := l.Load(fs, opts)
		took := time.Since(start)
		if err != nil {
			return 0, err
		}
		if len(set.Resources) != 100_100 || len(set.ResourceSets) != 1 || set.ResourceSets[0].Members != 100_000 {
			return 0, fmt.Errorf("%d resources, sets %+v: want 100,100 and one set of 100,000", len(set.Resources), set.ResourceSets)
		}
		return took, nil
	}
	changed := changeNetwork(files)
	first := make([]time.Duration, 3)
	reload := make([]time.Duration, 3)
	for r := range first {
		l := manifest.NewLoader()
		var err error
		if first[r], err = load(l, files); err != nil {
			return err
		}
		if reload[r], err = load(l, changed); err != nil {
			return err
		}
	}
	slices.Sort(first)
	slices.Sort(reload)
	record("resourceset_expand_100k", ms(first[1]), "ms", "≤ 1000", atMost(1000))
	record("resourceset_reload_100k", ms(reload[1]), "ms", "—", nil)
	return nil
}

// fleetFiles is manifesttest.Fleet as a revision's files.
func fleetFiles(tenants, regions int) []sources.File {
	pairs := manifesttest.Fleet(tenants, regions)
	files := make([]sources.File, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		data := []byte(pairs[i+1])
		files = append(files, sources.File{Path: pairs[i], Hash: manifest.HashJSON(data), Data: data})
	}
	return files
}

// changeNetwork returns files with the unrelated change of resourceset_reload_100k: the
// first region's Network gets another CIDR in its spec.
func changeNetwork(files []sources.File) []sources.File {
	changed := slices.Clone(files)
	for i, f := range changed {
		if f.Path == "networks/region-000.yaml" {
			data := bytes.Replace(f.Data, []byte("cidr: 10.0.0.0/16"), []byte("cidr: 10.255.0.0/16"), 1)
			changed[i] = sources.File{Path: f.Path, Hash: manifest.HashJSON(data), Data: data}
		}
	}
	return changed
}
