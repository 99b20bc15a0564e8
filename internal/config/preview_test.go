package config

import (
	"strings"
	"testing"
	"time"
)

func TestPreviewConfig(t *testing.T) {
	t.Parallel()
	const head = "database: {url: \"\"}\ndataDir: data\nsources:\n  - name: infra\n"
	git := "    git: {url: https://github.com/acme/infra.git}\n"
	hook := "    webhook: {secret: s}\n"
	cs := "    commitStatus: {provider: github, token: t, repo: acme/infra}\n"
	for _, tc := range []struct {
		name, yaml, wantErr string
	}{
		{"complete", git + hook + cs + "    preview: {enabled: true, planTimeout: 30s, planConcurrency: 2, resolveOutputs: always, forkPlans: true}\n", ""},
		{"resolve never", git + "    preview: {resolveOutputs: never}\n", ""},
		{"resolve unknown", git + "    preview: {resolveOutputs: forks}\n", `preview.resolveOutputs: "forks" is not sameRepository, always or never`},
		{"disabled needs nothing", git + "    preview: {enabled: false}\n", ""},
		{"no commitStatus", git + hook + "    preview: {enabled: true}\n", "preview: previews need commitStatus"},
		{"no webhook", git + cs + "    preview: {enabled: true}\n", "previews need the source's webhook"},
		{"dir source", "    dir: {path: ./repo}\n" + hook + cs + "    preview: {enabled: true}\n", "previews need a git source"},
		{"negative timeout", git + "    preview: {planTimeout: -1s}\n", "planTimeout: -1s is negative"},
		{"unknown field", git + "    preview: {enabled: true, comment: false}\n", "comment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse([]byte(head+tc.yaml), "/etc/trueup", env(nil))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "complete" {
				pv := c.Sources[0].Preview
				if !c.Sources[0].PreviewEnabled() || pv.PlanTimeout != 30*time.Second || pv.PlanConcurrency != 2 ||
					pv.ResolveOutputs != ResolveAlways || !pv.ForkPlans {
					t.Errorf("preview %+v", pv)
				}
			}
		})
	}
}
