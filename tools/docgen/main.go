// Command docgen writes the generated reference pages under docs/reference/: config.md from
// internal/config, metrics.md from internal/metrics' registry and api.md from
// internal/server/openapi.json. cli.md comes from the cobra tree, which lives in package
// main of cmd/trueup; a test there writes it (see `make docs`).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/metrics"
	"github.com/trueup-dev/trueup/internal/refdoc"
)

// regenerate is the command every generated page names.
const regenerate = "make docs"

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	pages, err := pages(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
	for _, name := range refdoc.SortedKeys(pages) {
		path := filepath.Join(*root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "docgen:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, []byte(pages[name]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "docgen:", err)
			os.Exit(1)
		}
	}
}

// pages renders each page this command owns, by its path relative to the repository's root.
func pages(root string) (map[string]string, error) {
	cfg, err := configPage(root)
	if err != nil {
		return nil, fmt.Errorf("config.md: %w", err)
	}
	met, err := metricsPage()
	if err != nil {
		return nil, fmt.Errorf("metrics.md: %w", err)
	}
	api, err := apiPage(root)
	if err != nil {
		return nil, fmt.Errorf("api.md: %w", err)
	}
	return map[string]string{
		"docs/reference/config.md":  cfg,
		"docs/reference/metrics.md": met,
		"docs/reference/api.md":     api,
	}, nil
}

// probeConfig opens every optional block the loader fills defaults into, so that Defaults
// finds them; it holds only what validation requires besides.
const probeConfig = `
sources:
  - name: probe-git
    git: {url: "https://git.example/repo.git"}
  - name: probe-dir
    dir: {path: manifests}
  - name: probe-oci
    oci: {url: "oci://registry.example/acme/config"}
auth:
  oidc:
    issuer: https://id.example
    clientID: trueup
    clientSecret: probe-client-secret-of-some-length
    roles: [{group: ops, role: admin}]
notifications:
  providers:
    - {name: mail, type: email, smtp: {host: smtp.example}, from: trueup@example.com, to: [ops@example.com]}
tracing: {endpoint: "https://otel.example"}
secrets:
  stores:
    - name: vault
      type: vault
      vault: {address: "https://vault.example", approle: {roleID: r, secretID: s}}
`

// probeBase is the folder the probe's relative paths resolve against; it is cut from defaults.
const probeBase = "/config-folder"

func configPage(root string) (string, error) {
	docs, err := refdoc.StructDocs(os.DirFS(filepath.Join(root, "internal/config")))
	if err != nil {
		return "", err
	}
	// The source kinds' blocks are types of their own packages (sources/gitsource, …).
	for _, pkg := range foreignPackages(reflect.TypeFor[config.Config]()) {
		more, err := refdoc.StructDocs(os.DirFS(filepath.Join(root, strings.TrimPrefix(pkg, module+"/"))))
		if err != nil {
			return "", err
		}
		for k, v := range more {
			docs[path.Base(pkg)+"."+k] = v
		}
	}
	example, err := os.ReadFile(filepath.Join(root, "examples/trueup.yaml"))
	if err != nil {
		return "", err
	}
	loaded, err := config.Parse([]byte(probeConfig), probeBase, func(string) string { return "" })
	if err != nil {
		return "", fmt.Errorf("probe config: %w", err)
	}
	var raw config.Config
	dec := yaml.NewDecoder(bytes.NewReader([]byte(probeConfig)))
	if err := dec.Decode(&raw); err != nil {
		return "", fmt.Errorf("probe config: %w", err)
	}
	return refdoc.ConfigPage{
		Regenerate:  regenerate,
		Example:     example,
		ExampleName: "examples/trueup.yaml",
		Root:        reflect.TypeFor[config.Config](),
		Docs:        docs,
		Defaults:    refdoc.Defaults(loaded, &raw, probeBase+"/"),
		Scalars: map[reflect.Type]string{
			reflect.TypeFor[config.MemoryLimit](): "string",
			reflect.TypeFor[config.Prune]():       "boolean or mapping",
		},
		Keys: map[string]string{"Action.Config": "config"},
	}.Render(), nil
}

// module is the import path of the repository's root.
const module = "github.com/trueup-dev/trueup"

// foreignPackages lists the packages of this module, other than root's, whose struct types
// root holds, sorted.
func foreignPackages(root reflect.Type) []string {
	seen := map[reflect.Type]bool{}
	pkgs := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		if p := t.PkgPath(); p != root.PkgPath() && strings.HasPrefix(p, module+"/") {
			pkgs[p] = true
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				walk(f.Type)
			}
		}
	}
	walk(root)
	return refdoc.SortedKeys(pkgs)
}

func metricsPage() (string, error) {
	// Each scrape-time source is given, so that its series are registered too.
	m := metrics.New(metrics.Options{
		Queue:        func(context.Context) (metrics.QueueStats, error) { return metrics.QueueStats{}, nil },
		RateLimits:   func() map[string]int { return map[string]int{"probe": 1} },
		SpansDropped: func() uint64 { return 0 },
		State: func(context.Context) (metrics.State, error) {
			return metrics.State{Sources: []metrics.SourceState{{Name: "probe", LastCompletedSync: time.Unix(1, 0)}},
				Leases: map[string]bool{"maintenance": true}}, nil
		},
		Resources: func(context.Context) ([]metrics.ResourceCount, error) {
			return []metrics.ResourceCount{{Source: "probe", Phase: "Ready", Count: 1}}, nil
		},
	})
	ms, err := refdoc.Metrics(m.Collectors())
	if err != nil {
		return "", err
	}
	return refdoc.MetricsPage(regenerate, ms), nil
}
func apiPage(root string) (string, error) {
	doc, err := os.ReadFile(filepath.Join(root, "internal/server/openapi.json"))
	if err != nil {
		return "", err
	}
	return refdoc.APIPage(regenerate, doc)
}
