package ocisource_test

import (
	"testing"
	"time"

	"github.com/trueup-dev/trueup/sources"
	"github.com/trueup-dev/trueup/sources/ocisource"
	"github.com/trueup-dev/trueup/sources/sourcetest"
)

func TestSpec(t *testing.T) {
	t.Parallel()
	d := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	sourcetest.Run(t, func() sources.Spec { return &ocisource.Spec{} }, []sourcetest.Case{
		{Name: "defaults", Text: "url: oci://ghcr.io/acme/config",
			Info: sources.Info{Interval: time.Minute, URL: "oci://ghcr.io/acme/config", Ref: "tag:latest"}},
		{Name: "semver and path", Text: "url: oci://ghcr.io/acme/config\nsemver: '>=1.0 <2'\npath: deploy\ninterval: 10s",
			Info: sources.Info{Interval: 10 * time.Second, URL: "oci://ghcr.io/acme/config", Ref: "semver:>=1.0 <2", Path: "deploy"}},
		{Name: "digest", Text: "url: oci://ghcr.io/acme/config\ndigest: " + d,
			Info: sources.Info{Interval: time.Minute, URL: "oci://ghcr.io/acme/config", Ref: "digest:" + d}},
		{Name: "secretRef", Text: "url: oci://ghcr.io/acme/config\nsecretRef: {file: docker.json}",
			Info: sources.Info{Interval: time.Minute, URL: "oci://ghcr.io/acme/config", Ref: "tag:latest"}, Files: []string{"/cfg/docker.json"}},
		{Name: "insecure loopback", Text: "url: oci://127.0.0.1:5000/acme/config\ninsecure: true",
			Info: sources.Info{Interval: time.Minute, URL: "oci://127.0.0.1:5000/acme/config", Ref: "tag:latest"}},
		{Name: "insecure localhost", Text: "url: oci://localhost:5000/acme/config\ninsecure: true",
			Info: sources.Info{Interval: time.Minute, URL: "oci://localhost:5000/acme/config", Ref: "tag:latest"}},
		{Name: "insecure elsewhere", Text: "url: oci://registry.example:5000/acme/config\ninsecure: true",
			Err: "sources[0].oci.insecure: only for a loopback registry"},
		{Name: "insecure private address", Text: "url: oci://10.0.0.1/acme/config\ninsecure: true",
			Err: "sources[0].oci.insecure: only for a loopback registry"},
		{Name: "no url", Text: "tag: v1", Err: "sources[0].oci.url: required"},
		{Name: "not oci://", Text: "url: https://ghcr.io/acme/config", Err: "must start with oci://"},
		{Name: "tag in url", Text: "url: oci://ghcr.io/acme/config:v1", Err: "without a tag"},
		{Name: "no repository", Text: "url: oci://ghcr.io", Err: "oci://host/repository"},
		{Name: "credentials in url", Text: "url: oci://u:p@ghcr.io/acme/config", Err: "do not go in the url"},
		{Name: "tag and digest", Text: "url: oci://ghcr.io/acme/config\ntag: v1\ndigest: " + d, Err: "tag, semver and digest are exclusive"},
		{Name: "bad semver", Text: "url: oci://ghcr.io/acme/config\nsemver: 'not a range'", Err: "sources[0].oci.semver"},
		{Name: "bad digest", Text: "url: oci://ghcr.io/acme/config\ndigest: sha256:abc", Err: "sources[0].oci.digest"},
		{Name: "bad tag", Text: "url: oci://ghcr.io/acme/config\ntag: 'a b'", Err: "sources[0].oci.tag"},
		{Name: "path escapes", Text: "url: oci://ghcr.io/acme/config\npath: ../x", Err: "sources[0].oci.path"},
		{Name: "short interval", Text: "url: oci://ghcr.io/acme/config\ninterval: 10ms", Err: "below 1s"},
		{Name: "username alone", Text: "url: oci://ghcr.io/acme/config\nusername: u", Err: "username and password go together"},
		{Name: "password and secretRef", Text: "url: oci://ghcr.io/acme/config\nusername: u\npassword: p\nsecretRef: {file: x}", Err: "exclusive"},
		{Name: "unknown key", Text: "url: oci://ghcr.io/acme/config\nbranch: main", Err: "field branch not found"},
	})
}
