// Package helm tests the chart in trueup/ with the helm binary of a pinned release, built
// from the Go module proxy once per test run: `helm lint` and `helm template` on several
// value sets, each rendered object decoded strictly into its Kubernetes API type (see
// validate_test.go), and what the Deployment promises.
package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/trueup-dev/trueup/internal/config"
)

// helmModule is the helm release the tests run (go install from the module proxy, so CI
// needs nothing but Go).
const helmModule = "helm.sh/helm/v3/cmd/helm@v3.22.0"

// buildDeadline bounds building helm.
const buildDeadline = 15 * time.Minute

const chartDir = "trueup"

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
	binDir   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// helmBin builds helm once per test run (go's build cache keeps it across runs).
func helmBin(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if binDir, helmErr = os.MkdirTemp("", "trueup-helm-"); helmErr != nil {
			return
		}
		// A deadline of its own, well inside the package's: the build is quick from the cache
		// `make test-tools` fills, minutes from the module proxy on a fresh machine.
		ctx, cancel := context.WithTimeout(context.Background(), buildDeadline)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "install", helmModule)
		cmd.Env = append(os.Environ(), "GOBIN="+binDir)
		cmd.Dir = binDir // outside the module: helm's requirements, not trueup's
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = fmt.Errorf("go install %s (within %v): %v; `make test-tools` builds it before the "+
				"tests, from the Go module proxy\n%s", helmModule, buildDeadline, err, out)
			return
		}
		helmPath = filepath.Join(binDir, "helm")
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// helm runs the helm binary with a private home (no repositories, no plugins).
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), helmBin(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data", "KUBECONFIG="+home+"/kubeconfig")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), out.String())
	}
	return out.String(), err
}

// valueSets are the value files the chart is linted and rendered with.
var valueSets = map[string]string{
	"defaults": ``,
	"ingress-tls-3-replicas": `
replicaCount: 3
database: {url: "postgres://trueup:secret@db.example.com:5432/trueup?sslmode=verify-full"}
adminTokenSHA256: 6cac35470968ade211482469f6bc5c87f22c4cc87c6a1473644ef7667cfb2998
ingress:
  enabled: true
  className: nginx
  annotations: {cert-manager.io/cluster-issuer: letsencrypt}
  hosts: [{host: trueup.example.com, paths: [{path: /, pathType: Prefix}]}]
  tls: [{secretName: trueup-tls, hosts: [trueup.example.com]}]
resources: {requests: {cpu: 100m, memory: 256Mi}, limits: {memory: 1Gi}}
`,
	"existing-secret": `
database: {existingSecret: pg, existingSecretKey: uri}
envFrom: [{secretRef: {name: trueup-env}}]
env: [{name: TRUEUP_WEBHOOK_SECRET, valueFrom: {secretKeyRef: {name: hooks, key: infra}}}]
`,
	"servicemonitor": `
database: {existingSecret: pg}
serviceMonitor:
  enabled: true
  labels: {release: prometheus}
  tokenSecret: {name: trueup-metrics, key: token}
`,
}

// render runs helm lint and helm template with the value set and returns the objects by
// kind/name.
func render(t *testing.T, values string, extra ...string) map[string][]byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := helm(t, append([]string{"lint", "--strict", chartDir, "-f", file}, extra...)...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := helm(t, append([]string{"template", "rel", chartDir, "--namespace", "ops", "-f", file}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string][]byte{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template wrote YAML that does not parse: %v\n%s", err, out)
		}
		if doc == nil {
			continue
		}
		b, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		meta, _ := doc["metadata"].(map[string]any)
		key := fmt.Sprintf("%v/%v", doc["kind"], meta["name"])
		if _, dup := objs[key]; dup {
			t.Errorf("%s rendered twice", key)
		}
		objs[key] = b
	}
	return objs
}

// TestChartRenders lints and renders each value set and validates every object.
func TestChartRenders(t *testing.T) {
	t.Parallel()
	for name, values := range valueSets {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			objs := render(t, values)
			for key, doc := range objs {
				if err := checkObject(doc); err != nil {
					t.Errorf("%s: %v\n%s", key, err, doc)
				}
			}
			want := []string{"ConfigMap/rel-trueup", "Deployment/rel-trueup", "Service/rel-trueup", "PodDisruptionBudget/rel-trueup"}
			switch name {
			case "ingress-tls-3-replicas":
				want = append(want, "Ingress/rel-trueup", "Secret/rel-trueup-database")
			case "servicemonitor":
				want = append(want, "ServiceMonitor/rel-trueup")
				// The scrape job is the Service's app.kubernetes.io/name, trueup: the
				// shipped alert rules read up{job="trueup"}.
				var sm struct{ Spec struct{ JobLabel string } }
				var svc struct {
					Metadata struct{ Labels map[string]string }
				}
				if err := sigsyaml.Unmarshal(objs["ServiceMonitor/rel-trueup"], &sm); err != nil || sm.Spec.JobLabel != "app.kubernetes.io/name" {
					t.Errorf("ServiceMonitor jobLabel %q (%v), want app.kubernetes.io/name", sm.Spec.JobLabel, err)
				}
				if err := sigsyaml.Unmarshal(objs["Service/rel-trueup"], &svc); err != nil || svc.Metadata.Labels["app.kubernetes.io/name"] != "trueup" {
					t.Errorf("Service labels %v (%v), want app.kubernetes.io/name: trueup", svc.Metadata.Labels, err)
				}
			}
			if len(objs) != len(want) {
				t.Errorf("rendered %d objects, want %v", len(objs), want)
			}
			for _, k := range want {
				if _, ok := objs[k]; !ok {
					t.Errorf("%s is not rendered", k)
				}
			}
		})
	}
}

// TestDeployment checks what the Deployment promises: the image make image builds, non-root
// with a read-only root filesystem, the probes, the config mounted from the ConfigMap (a
// config trueup accepts), the database URL from its Secret, a rollout on a config change.
func TestDeployment(t *testing.T) {
	t.Parallel()
	objs := render(t, valueSets["ingress-tls-3-replicas"])
	var d appsv1.Deployment
	if err := sigsyaml.UnmarshalStrict(objs["Deployment/rel-trueup"], &d); err != nil {
		t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas = %v, want 3", d.Spec.Replicas)
	}
	// Two versions never run on one schema (docs/guides/database.md, Upgrading trueup).
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %q, want Recreate", d.Spec.Strategy.Type)
	}
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]

	chart := readChart(t)
	if want := "trueup:" + chart.AppVersion; c.Image != want {
		t.Errorf("image %q, want %q (make image's name, tagged with the chart's appVersion)", c.Image, want)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`).MatchString(chart.AppVersion) {
		t.Errorf("appVersion %q is not an image tag", chart.AppVersion)
	}

	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and the image's user 65532", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container securityContext %+v: want a read-only root, no privilege escalation, no capabilities", sc)
	}

	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "http" {
			t.Errorf("probe on %s: %+v", name, p)
			continue
		}
		if len(p.HTTPGet.HTTPHeaders) != 1 || p.HTTPGet.HTTPHeaders[0] != (corev1.HTTPHeader{Name: "Host", Value: "localhost"}) {
			t.Errorf("probe on %s sends %v, want Host: localhost (trueup's Host check)", name, p.HTTPGet.HTTPHeaders)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports %+v, want http 8080 (config.server.listen's)", c.Ports)
	}

	// Migrations run in an init container, same image, environment, config and security
	// context, so that the startup probe never cuts one short.
	if len(pod.InitContainers) != 1 {
		t.Fatalf("%d init containers, want the migration's", len(pod.InitContainers))
	}
	ic := pod.InitContainers[0]
	if got := strings.Join(ic.Args, " "); got != "migrate --config /etc/trueup/trueup.yaml" || ic.Image != c.Image {
		t.Errorf("init container runs %q %q, want migrate --config /etc/trueup/trueup.yaml in %q", ic.Image, got, c.Image)
	}
	if !reflect.DeepEqual(ic.Env, c.Env) || !reflect.DeepEqual(ic.EnvFrom, c.EnvFrom) || !reflect.DeepEqual(ic.SecurityContext, c.SecurityContext) {
		t.Errorf("init container env %v %v security %+v, want the main container's", ic.Env, ic.EnvFrom, ic.SecurityContext)
	}
	if len(ic.VolumeMounts) == 0 || !reflect.DeepEqual(ic.VolumeMounts[0], c.VolumeMounts[0]) || ic.StartupProbe != nil {
		t.Errorf("init container mounts %+v (want the config's, %+v) and probe %+v", ic.VolumeMounts, c.VolumeMounts[0], ic.StartupProbe)
	}

	// The config: /etc/trueup from the ConfigMap, read by serve --config.
	if got := strings.Join(c.Args, " "); got != "serve --config /etc/trueup/trueup.yaml" {
		t.Errorf("args %q", got)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	cfgMount, ok := mounts["/etc/trueup"]
	if !ok || !cfgMount.ReadOnly {
		t.Fatalf("/etc/trueup is not mounted read-only: %+v", c.VolumeMounts)
	}
	if v := volumes[cfgMount.Name]; v.ConfigMap == nil || v.ConfigMap.Name != "rel-trueup" {
		t.Errorf("volume %s is not the ConfigMap rel-trueup: %+v", cfgMount.Name, v)
	}
	// What trueup writes (dataDir, temporary files) is on emptyDirs.
	for _, dir := range []string{"/var/lib/trueup", "/tmp"} {
		if m, ok := mounts[dir]; !ok || volumes[m.Name].EmptyDir == nil {
			t.Errorf("%s is not an emptyDir", dir)
		}
	}

	var cm corev1.ConfigMap
	if err := sigsyaml.UnmarshalStrict(objs["ConfigMap/rel-trueup"], &cm); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TRUEUP_DATABASE_URL": "postgres://u@db/trueup", "TRUEUP_ADMIN_TOKEN_SHA256": strings.Repeat("ab", 32)}
	cfg, err := config.Parse([]byte(cm.Data["trueup.yaml"]), "/etc/trueup", func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("trueup refuses the ConfigMap's config: %v\n%s", err, cm.Data["trueup.yaml"])
	}
	if cfg.DataDir != "/var/lib/trueup" || cfg.Server.Listen != "0.0.0.0:8080" {
		t.Errorf("dataDir %q, listen %q: want the mounts' and the port's", cfg.DataDir, cfg.Server.Listen)
	}
	if err := config.CheckExposure(cfg.Server.Listen, cfg.Auth); err != nil {
		t.Errorf("serve would refuse the config: %v", err)
	}
	if cfg.Server.ExternalURL != "https://trueup.example.com/" {
		t.Errorf("server.externalURL %q, want the ingress host (trueup answers only the Host names it serves)", cfg.Server.ExternalURL)
	}
	sum := d.Spec.Template.Annotations["checksum/config"]
	if sum == "" {
		t.Error("no checksum/config annotation: a config change would not roll the pods")
	}

	// The database URL from the Secret the chart made.
	var db *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "TRUEUP_DATABASE_URL" {
			db = &c.Env[i]
		}
	}
	if db == nil || db.ValueFrom == nil || db.ValueFrom.SecretKeyRef == nil ||
		db.ValueFrom.SecretKeyRef.Name != "rel-trueup-database" || db.ValueFrom.SecretKeyRef.Key != "url" {
		t.Errorf("TRUEUP_DATABASE_URL: %+v, want the Secret rel-trueup-database's url", db)
	}
	var secret corev1.Secret
	if err := sigsyaml.UnmarshalStrict(objs["Secret/rel-trueup-database"], &secret); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret.StringData["url"], "postgres://trueup:secret@db.example.com") {
		t.Errorf("the Secret holds %v", secret.StringData)
	}

	// Another config rolls the pods.
	changed := render(t, valueSets["ingress-tls-3-replicas"]+"config: {database: {url: x}, dataDir: /var/lib/trueup, server: {listen: 127.0.0.1:8080}}\n")
	var d2 appsv1.Deployment
	if err := sigsyaml.UnmarshalStrict(changed["Deployment/rel-trueup"], &d2); err != nil {
		t.Fatal(err)
	}
	if d2.Spec.Template.Annotations["checksum/config"] == sum {
		t.Error("checksum/config is the same for another config")
	}
}

// TestContainerPort: the container's port is config.server.listen's; a listen without a
// port stops the rendering.
func TestContainerPort(t *testing.T) {
	t.Parallel()
	for listen, want := range map[string]int32{":9090": 9090, "0.0.0.0:7000": 7000, "[::]:8443": 8443} {
		t.Run(listen, func(t *testing.T) {
			t.Parallel()
			objs := render(t, fmt.Sprintf("config: {server: {listen: %q}}\n", listen))
			var d appsv1.Deployment
			if err := sigsyaml.UnmarshalStrict(objs["Deployment/rel-trueup"], &d); err != nil {
				t.Fatal(err)
			}
			if p := d.Spec.Template.Spec.Containers[0].Ports; len(p) != 1 || p[0].Name != "http" || p[0].ContainerPort != want {
				t.Errorf("ports %+v, want http %d", p, want)
			}
		})
	}
	for _, listen := range []string{"0.0.0.0", "${PORT}", ":0", ":70000"} {
		out, err := helm(t, "template", "rel", chartDir, "--set-string", "config.server.listen="+listen)
		if err == nil || !strings.Contains(err.Error(), "config.server.listen") {
			t.Errorf("listen %q: %v\n%s", listen, err, out)
		}
	}
	if out, err := helm(t, "template", "rel", chartDir, "--set", "config.server=null"); err == nil ||
		!strings.Contains(err.Error(), "config.server.listen") {
		t.Errorf("no server.listen: %v\n%s", err, out)
	}
}

// TestExistingSecret: the URL comes from the named Secret and key; the chart makes none.
func TestExistingSecret(t *testing.T) {
	t.Parallel()
	objs := render(t, valueSets["existing-secret"])
	var d appsv1.Deployment
	if err := sigsyaml.UnmarshalStrict(objs["Deployment/rel-trueup"], &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	ref := c.Env[0].ValueFrom.SecretKeyRef
	if c.Env[0].Name != "TRUEUP_DATABASE_URL" || ref == nil || ref.Name != "pg" || ref.Key != "uri" {
		t.Errorf("env %+v, want TRUEUP_DATABASE_URL from pg's uri", c.Env)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "trueup-env" {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	for key := range objs {
		if strings.HasPrefix(key, "Secret/") {
			t.Errorf("%s rendered beside an existing Secret", key)
		}
	}
}

// TestSchemaRefusesBadValues: values.schema.json stops lint and template before rendering.
func TestSchemaRefusesBadValues(t *testing.T) {
	t.Parallel()
	for name, set := range map[string][]string{
		"replicas not a number": {"--set", "replicaCount=three"},
		"negative replicas":     {"--set", "replicaCount=-1"},
		"unknown pull policy":   {"--set", "image.pullPolicy=Sometimes"},
		"misspelt key":          {"--set", "replicas=3"},
		"not a PostgreSQL URL":  {"--set", "database.url=mysql://db/trueup"},
		"root":                  {"--set", "podSecurityContext.runAsNonRoot=false"},
		"pod user root":         {"--set", "podSecurityContext.runAsUser=0"},
		"container root":        {"--set", "securityContext.runAsNonRoot=false"},
		"container user root":   {"--set", "securityContext.runAsUser=0"},
		// Kubernetes refuses a Deployment with both.
		"Recreate rolling":    {"--set", "strategy.type=Recreate", "--set", "strategy.rollingUpdate.maxSurge=1"},
		"token not a SHA-256": {"--set", "adminTokenSHA256=tu_abc"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, cmd := range [][]string{{"lint", chartDir}, {"template", "rel", chartDir}} {
				out, err := helm(t, append(cmd, set...)...)
				if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") {
					t.Errorf("helm %s %v: %v\n%s", cmd[0], set, err, out)
				}
			}
		})
	}
	// ServiceMonitor without the token's Secret: /metrics would answer 401.
	if _, err := helm(t, "template", "rel", chartDir, "--set", "serviceMonitor.enabled=true"); err == nil ||
		!strings.Contains(err.Error(), "serviceMonitor.tokenSecret.name") {
		t.Errorf("a ServiceMonitor without a token renders: %v", err)
	}
}

type chartMeta struct {
	APIVersion string `yaml:"apiVersion"`
	Name       string `yaml:"name"`
	Version    string `yaml:"version"`
	AppVersion string `yaml:"appVersion"`
}

func readChart(t *testing.T) chartMeta {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c chartMeta
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
