package render

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/sources"
	"go.yaml.in/yaml/v3"
)

const (
	// webDeployment is a Deployment that refers to a ConfigMap and a Secret by name.
	webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        envFrom: [{configMapRef: {name: settings}}]
        volumeMounts: [{name: s, mountPath: /s}]
      volumes: [{name: s, secret: {secretName: creds}}]
`
	inlineDeploy = webDeployment + `---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
`
	inlineConfig = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: base}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {k: v}\n"
)

// TestInlinedBasesBuildTheSame: a kustomization whose plain bases are inlined renders the
// same files, byte for byte, as when kustomize accumulates the bases itself, whatever the
// overlay does with them (name prefixes and the references they rename, labels and
// selectors, namespaces, patches, generators, replacements, images, several bases and
// files in order); a base that is not plain is not inlined.
func TestInlinedBasesBuildTheSame(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"base/kustomization.yaml":         "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deploy.yaml\n- conf/config.yaml\n",
		"base/deploy.yaml":                inlineDeploy,
		"base/conf/config.yaml":           inlineConfig,
		"other/kustomization.yaml":        "resources: [cm.yaml]\n",
		"other/cm.yaml":                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {a: b}\n",
		"prefixed/kustomization.yaml":     "resources: [cm.yaml]\nnamePrefix: x-\n",
		"prefixed/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: pre}\n",
		"wrongversion/kustomization.yaml": "apiVersion: foo/v9\nkind: Kustomization\nresources: [cm.yaml]\n",
		"wrongversion/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: wrong}\n",
		"kustomization.yaml":              "resources: [top.yaml]\n",
		"top.yaml":                        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: top}\n",
	}
	for _, c := range []struct {
		name, kust string
		inlined    bool
	}{
		{"prefix, labels, patch", "resources: [../base]\nnamePrefix: prod-\nlabels: [{pairs: {env: prod}, includeSelectors: true}]\npatches:\n- target: {kind: Deployment, name: web}\n  patch: |-\n    - {op: replace, path: /spec/replicas, value: 3}\n", true},
		{"namespace, common labels and annotations, suffix", "# an overlay\nnamespace: prod\nnameSuffix: -v2\ncommonLabels: {tier: front}\ncommonAnnotations: {owner: me}\nresources:\n  - ../base   # the base\n", true},
		{"generator (not inlined)", "resources: [../base]\nconfigMapGenerator:\n- {name: settings, behavior: merge, literals: [mode=prod]}\n", false},
		{"replacement, images, bases and a file", "resources: [../base, ../other, extra.yaml]\nreplacements:\n- source: {kind: ConfigMap, name: other, fieldPath: data.a}\n  targets: [{select: {kind: Service}, fieldPaths: [metadata.annotations.a], options: {create: true}}]\nimages: [{name: nginx, newTag: '1.26'}]\n", true},
		{"strategic merge patch in place", "resources: [../base]\npatches:\n- patch: |\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: web}\n    spec:\n      template:\n        spec:\n          containers:\n          - {name: web, image: nginx:2}\n", true},
		{"base that is not plain", "resources: [../prefixed, ../other]\n", true},
		{"only a base that is not plain", "resources: [../prefixed]\n", false},
		{"same resource twice", "resources: [../other, ../other]\n", true},
		{"base with a wrong apiVersion (not inlined)", "resources: [../wrongversion]\n", false},
		{"a folder holding the overlay (not inlined)", "resources: [.., ../base]\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := []sources.File{{Path: "ov/kustomization.yaml", Data: []byte(c.kust)},
				{Path: "ov/extra.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\n")}}
			for p, d := range base {
				files = append(files, sources.File{Path: p, Data: []byte(d)})
			}
			tr := newTree(files, "")
			ch, err := tr.check("ov")
			if err != nil {
				t.Fatal(err)
			}
			in := tr.inline("ov", ch)
			if (in != nil) != c.inlined {
				t.Fatalf("inlined = %v, want %v", in != nil, c.inlined)
			}
			ctx := context.Background()
			want, wantErr := tr.buildMarked(ctx, "ov", ch, 100, markText, nil)
			if in != nil {
				got, err := tr.buildMarked(ctx, "ov", ch, 100, markText, in)
				if (err == nil) != (wantErr == nil) || err == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("inlined:\n%s\n%v\nnot inlined:\n%s\n%v", show(got), err, show(want), wantErr)
				}
			}
			// The render's own result is the build's without inlining, errors included.
			got, err := tr.build(ctx, "ov", ch, 100)
			if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("build: %s %v, want %s %v", show(got), err, show(want), wantErr)
			}
			if c.name == "same resource twice" && (wantErr == nil || strings.Contains(wantErr.Error(), inlinePrefix)) {
				t.Fatalf("error %v: want kustomize's, naming the base", wantErr)
			}
			for name, msg := range map[string]string{
				"base with a wrong apiVersion (not inlined)": "apiVersion for Kustomization should be kustomize.config.k8s.io/v1beta1",
				"a folder holding the overlay (not inlined)": "cycle detected",
			} {
				if c.name == name && (err == nil || !strings.Contains(err.Error(), msg)) {
					t.Fatalf("error %v, want kustomize's %q", err, msg)
				}
			}
		})
	}
}

// TestPlainBaseNotItsOwnFolder: the kustomization's own folder and the folders holding it
// are never plain bases (kustomize reports the cycle; the pre-check refuses "." itself).
func TestPlainBaseNotItsOwnFolder(t *testing.T) {
	t.Parallel()
	tr := newTree([]sources.File{
		{Path: "kustomization.yaml", Data: []byte("resources: [top/ov/cm.yaml]\n")},
		{Path: "top/kustomization.yaml", Data: []byte("resources: [ov/cm.yaml]\n")},
		{Path: "top/ov/kustomization.yaml", Data: []byte("resources: [cm.yaml]\n")},
		{Path: "top/ov/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")},
	}, "")
	for _, e := range []string{".", "..", "../..", "../ov"} {
		if files := tr.plainBase("top/ov", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e}); files != nil {
			t.Errorf("%s: plain base %v", e, files)
		}
	}
}

// TestInlineFolderNamedLikeAFile: a file named like a copy folder gets its own folder name,
// and the build is the one without inlining, every time.
func TestInlineFolderNamedLikeAFile(t *testing.T) {
	t.Parallel()
	tr := newTree([]sources.File{
		{Path: "ov/kustomization.yaml", Data: []byte("resources: [.trueup-inline-1, ../base]\n")},
		{Path: "ov/.trueup-inline-1", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: file}\n")},
		{Path: "base/kustomization.yaml", Data: []byte("resources: [cm.yaml]\n")},
		{Path: "base/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\n")},
	}, "")
	ch, err := tr.check("ov")
	if err != nil {
		t.Fatal(err)
	}
	in := tr.inline("ov", ch)
	if in == nil {
		t.Fatal("not inlined")
	}
	for to := range in.copies {
		if strings.HasPrefix(to, "ov/.trueup-inline-1/") {
			t.Fatalf("copy %s under the file ov/.trueup-inline-1", to)
		}
	}
	ctx := context.Background()
	want, err := tr.buildMarked(ctx, "ov", ch, 100, markText, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		got, err := tr.build(ctx, "ov", ch, 100)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("build: %s %v, want %s", show(got), err, show(want))
		}
	}
}

func show(files []sources.File) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString("# " + f.Path + "\n" + string(f.Data))
	}
	return b.String()
}
