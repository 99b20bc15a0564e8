package webhook

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

const (
	distributionPush = `{"events":[{"id":"e1","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:aa","repository":"%s","tag":"%s"},"request":{"host":"registry.example"}}]}`
	harborPush       = `{"type":"%s","occur_at":1700000000,"operator":"robot","event_data":{"resources":[{"digest":"sha256:aa","tag":"%s","resource_url":"registry.example/acme/config:v1"}],"repository":{"name":"config","namespace":"acme","repo_full_name":"%s","repo_type":"private"}}}`
)

func TestRegistryPush(t *testing.T) {
	t.Parallel()
	f := setup(t, func(o *Options) {
		o.Sources["oci"] = Source{Secret: secret, Repository: "acme/config", Tag: "v1"}
		o.Sources["ocisemver"] = Source{Secret: secret, Repository: "acme/config"}
	})
	bearer := map[string]string{"Authorization": "Bearer " + secret, "Content-Type": "application/vnd.docker.distribution.events.v1+json"}
	for _, tc := range []struct {
		name, source, body string
		headers            map[string]string
		code               int
	}{
		{"distribution push of the tag", "oci", fmt.Sprintf(distributionPush, "acme/config", "v1"), bearer, http.StatusAccepted},
		{"distribution push of another tag", "oci", fmt.Sprintf(distributionPush, "acme/config", "v2"), bearer, http.StatusNoContent},
		{"distribution push of any tag (semver)", "ocisemver", fmt.Sprintf(distributionPush, "acme/config", "v2"), bearer, http.StatusAccepted},
		{"distribution push of another repository", "ocisemver", fmt.Sprintf(distributionPush, "acme/other", "v1"), bearer, http.StatusNoContent},
		{"distribution pull", "oci", `{"events":[{"action":"pull","target":{"repository":"acme/config","tag":"v1"}}]}`, bearer, http.StatusNoContent},
		{"distribution blob push", "ocisemver", `{"events":[{"action":"push","target":{"mediaType":"application/octet-stream","repository":"acme/config"}}]}`, bearer, http.StatusNoContent},
		{"harbor push of the tag", "oci", fmt.Sprintf(harborPush, "PUSH_ARTIFACT", "v1", "acme/config"), bearer, http.StatusAccepted},
		{"harbor push of another repository", "oci", fmt.Sprintf(harborPush, "PUSH_ARTIFACT", "v1", "acme/other"), bearer, http.StatusNoContent},
		{"harbor deletion", "oci", fmt.Sprintf(harborPush, "DELETE_ARTIFACT", "v1", "acme/config"), bearer, http.StatusNoContent},
		{"not json", "oci", "push!", bearer, http.StatusBadRequest},
		{"a git push", "oci", pushBody("main", commitA), bearer, http.StatusNoContent},
		{"bad secret", "oci", fmt.Sprintf(distributionPush, "acme/config", "v1"), map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"no secret", "oci", fmt.Sprintf(distributionPush, "acme/config", "v1"), nil, http.StatusUnauthorized},
		{"signed", "oci", fmt.Sprintf(distributionPush, "acme/config", "v1"), map[string]string{"X-Hub-Signature-256": sign(secret, fmt.Sprintf(distributionPush, "acme/config", "v1"))}, http.StatusAccepted},
	} {
		if got := f.post(t, tc.source, tc.body, tc.headers); got.code != tc.code {
			t.Errorf("%s: %d %+v, want %d", tc.name, got.code, got, tc.code)
		}
	}
	// A push only asks for a check of the tag: the payload's digest is not passed on.
	if got, want := f.trigger.got(), []string{"oci@", "ocisemver@", "oci@", "oci@"}; !reflect.DeepEqual(got, want) {
		t.Errorf("triggers %q, want %q", got, want)
	}
}
