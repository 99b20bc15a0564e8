package helm

import (
	"testing"

	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"
)

// checkObject validates a rendered object offline, as kubeconform would against the
// Kubernetes JSON schemas (which it downloads, and the test machines reach no network):
// the object is decoded strictly into its k8s.io/api type, so an unknown field or a value of
// the wrong type fails, and then the fields the schemas require, and the names and values
// the API server refuses, are checked. The ServiceMonitor, a Prometheus Operator CRD with no
// type in k8s.io/api, is decoded into serviceMonitor: the fields of monitoring.coreos.com/v1
// the chart uses, with their types.
func checkObject(doc []byte) error {
	var tm metav1.TypeMeta
	if err := sigsyaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	strict := func(v any) bool {
		if err := sigsyaml.UnmarshalStrict(doc, v); err != nil {
			errs = append(errs, err)
			return false
		}
		return true
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 ConfigMap":
		var o corev1.ConfigMap
		if strict(&o) {
			checkMeta(check, o.ObjectMeta, validation.IsDNS1123Subdomain)
			for k := range o.Data {
				check(len(validation.IsConfigMapKey(k)) == 0, "data key %q: %v", k, validation.IsConfigMapKey(k))
			}
		}
	case "v1 Secret":
		var o corev1.Secret
		if strict(&o) {
			checkMeta(check, o.ObjectMeta, validation.IsDNS1123Subdomain)
			for k := range o.StringData {
				check(len(validation.IsConfigMapKey(k)) == 0, "stringData key %q", k)
			}
		}
	case "v1 Service":
		var o corev1.Service
		if strict(&o) {
			checkMeta(check, o.ObjectMeta, validation.IsDNS1035Label)
			check(len(o.Spec.Ports) > 0, "spec.ports is required")
			for _, p := range o.Spec.Ports {
				check(p.Port >= 1 && p.Port <= 65535, "port %d", p.Port)
				checkPortRef(check, p.TargetPort)
			}
			checkSelector(check, o.Spec.Selector)
		}
	case "apps/v1 Deployment":
		var o appsv1.Deployment
		if strict(&o) {
			checkMeta(check, o.ObjectMeta, validation.IsDNS1123Subdomain)
			sel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
			check(o.Spec.Selector != nil && err == nil && !sel.Empty(), "spec.selector is required (%v)", err)
			check(err == nil && sel.Matches(labels.Set(o.Spec.Template.Labels)), "spec.selector does not match the template's labels")
			checkMeta(check, o.Spec.Template.ObjectMeta, nil)
			checkPod(check, o.Spec.Template.Spec)
		}
	case "networking.k8s.io/v1 Ingress":
		var o networkingv1.Ingress
		if strict(&o) {
			checkMeta(check, o.ObjectMeta, validation.IsDNS1123Subdomain)
			for _, r := range o.Spec.Rules {
				check(len(validation.IsDNS1123Subdomain(r.Host)) == 0, "host %q", r.Host)
				check(r.HTTP != nil && len(r.HTTP.Paths) > 0, "rule %q has no paths", r.Host)
				for _, p := range r.HTTP.Paths {
					check(p.PathType != nil, "path %q: pathType is required", p.Path)
					s := p.Backend.Service
					check(s != nil && s.Name != "" && (s.Port.Name != "") != (s.Port.Number != 0), "path %q: backend service name and one port", p.Path)
				}
			}
			for _, tls := range o.Spec.TLS {
				check(tls.SecretName != "" && len(tls.Hosts) > 0, "tls needs secretName and hosts")
			}
		}
	case "policy/v1 PodDisruptionBudget":
		var o policyv1.PodDisruptionBudget
		if strict(&o) {
			checkMeta(check, o.ObjectMeta, validation.IsDNS1123Subdomain)
			check((o.Spec.MinAvailable == nil) != (o.Spec.MaxUnavailable == nil), "exactly one of minAvailable and maxUnavailable")
			check(o.Spec.Selector != nil && len(o.Spec.Selector.MatchLabels) > 0, "spec.selector is required")
		}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		var o serviceMonitor
		if strict(&o) {
			checkMeta(check, o.ObjectMeta, validation.IsDNS1123Subdomain)
			check(len(o.Spec.Selector.MatchLabels) > 0, "spec.selector is required")
			check(len(o.Spec.Endpoints) > 0, "spec.endpoints is required")
			for _, e := range o.Spec.Endpoints {
				check(e.Port != "", "endpoint port is required")
				if a := e.Authorization; a != nil {
					check(a.Credentials.Name != "" && a.Credentials.Key != "", "authorization.credentials needs name and key")
				}
			}
		}
	default:
		return fmt.Errorf("no schema for %s %s", tm.APIVersion, tm.Kind)
	}
	return errors.Join(errs...)
}

type checker func(ok bool, format string, args ...any)

func checkMeta(check checker, m metav1.ObjectMeta, name func(string) []string) {
	if name != nil {
		check(m.Name != "" && len(name(m.Name)) == 0, "metadata.name %q: %v", m.Name, name(m.Name))
	}
	for k, v := range m.Labels {
		check(len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0, "label %s=%q", k, v)
	}
	for k := range m.Annotations {
		check(len(validation.IsQualifiedName(k)) == 0, "annotation key %q", k)
	}
}

func checkSelector(check checker, sel map[string]string) {
	check(len(sel) > 0, "selector is required")
	for k, v := range sel {
		check(len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0, "selector %s=%q", k, v)
	}
}

func checkPortRef(check checker, p intstr.IntOrString) {
	if p.Type == intstr.String {
		check(len(validation.IsValidPortName(p.StrVal)) == 0, "port name %q", p.StrVal)
	} else {
		check(p.IntVal >= 1 && p.IntVal <= 65535, "port %d", p.IntVal)
	}
}

func checkPod(check checker, pod corev1.PodSpec) {
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		check(len(validation.IsDNS1123Label(v.Name)) == 0, "volume name %q", v.Name)
		n := 0
		for _, set := range []bool{v.ConfigMap != nil, v.Secret != nil, v.EmptyDir != nil, v.PersistentVolumeClaim != nil, v.Projected != nil} {
			if set {
				n++
			}
		}
		check(n == 1, "volume %s: exactly one source", v.Name)
		volumes[v.Name] = true
	}
	check(len(pod.Containers) > 0, "spec.containers is required")
	for _, c := range pod.Containers {
		check(len(validation.IsDNS1123Label(c.Name)) == 0, "container name %q", c.Name)
		check(c.Image != "", "container %s: image", c.Name)
		ports := map[string]bool{}
		for _, p := range c.Ports {
			check(p.ContainerPort >= 1 && p.ContainerPort <= 65535, "containerPort %d", p.ContainerPort)
			if p.Name != "" {
				check(len(validation.IsValidPortName(p.Name)) == 0, "port name %q", p.Name)
				ports[p.Name] = true
			}
		}
		for _, e := range c.Env {
			check(len(validation.IsEnvVarName(e.Name)) == 0, "env name %q", e.Name)
			check(e.Value == "" || e.ValueFrom == nil, "env %s: value and valueFrom", e.Name)
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil {
				check(r.SecretKeyRef.Name != "" && r.SecretKeyRef.Key != "", "env %s: secretKeyRef needs name and key", e.Name)
			}
		}
		for _, m := range c.VolumeMounts {
			check(volumes[m.Name], "volumeMount %s names no volume", m.Name)
			check(m.MountPath != "", "volumeMount %s: mountPath", m.Name)
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p == nil {
				continue
			}
			check(p.HTTPGet != nil || p.Exec != nil || p.TCPSocket != nil || p.GRPC != nil, "container %s: a probe without a handler", c.Name)
			if h := p.HTTPGet; h != nil {
				checkPortRef(check, h.Port)
				check(h.Port.Type != intstr.String || ports[h.Port.StrVal], "probe port %q is no container port", h.Port.StrVal)
			}
		}
	}
}

// serviceMonitor is monitoring.coreos.com/v1 ServiceMonitor, the fields the chart sets.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel  string               `json:"jobLabel"`
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval"`
			ScrapeTimeout string `json:"scrapeTimeout"`
			Authorization *struct {
				Type        string                   `json:"type"`
				Credentials corev1.SecretKeySelector `json:"credentials"`
			} `json:"authorization"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// TestCheckObjectRefuses: what the API server or the schemas refuse fails checkObject.
func TestCheckObjectRefuses(t *testing.T) {
	t.Parallel()
	const pod = `
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: c, image: i, ports: [{name: http, containerPort: 8080}]}]`
	for name, tc := range map[string]struct {
		doc string
		ok  bool
	}{
		"valid Deployment":      {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:" + pod, true},
		"unknown field":         {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replica: 3" + pod, false},
		"wrong type":            {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: \"3\"" + pod, false},
		"selector not matching": {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: y}}\n  template:\n    metadata: {labels: {app: x}}\n    spec: {containers: [{name: c, image: i}]}", false},
		"no containers":         {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: x}}\n  template: {metadata: {labels: {app: x}}, spec: {containers: []}}", false},
		"bad name":              {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}", false},
		"probe on no port":      {"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  selector: {matchLabels: {app: x}}\n  template:\n    metadata: {labels: {app: x}}\n    spec: {containers: [{name: c, image: i, livenessProbe: {httpGet: {path: /, port: web}}}]}", false},
		"service without ports": {"apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {selector: {app: x}}", false},
		"ingress without type":  {"apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: i}\nspec: {rules: [{host: a.example, http: {paths: [{path: /, backend: {service: {name: s, port: {name: http}}}}]}}]}", false},
		"pdb with both":         {"apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {minAvailable: 1, maxUnavailable: 1, selector: {matchLabels: {app: x}}}", false},
		"monitor unknown field": {"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: m}\nspec: {selector: {matchLabels: {app: x}}, endpoints: [{port: http, bearer: x}]}", false},
		"unknown kind":          {"apiVersion: v1\nkind: Pod\nmetadata: {name: p}", false},
		"old apiVersion":        {"apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: p}", false},
	} {
		err := checkObject([]byte(tc.doc))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", name, err, tc.ok)
		}
	}
}
