package server

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

func TestForgeLinks(t *testing.T) {
	t.Parallel()
	const sha = "4f1c2a9e8b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e"
	cases := []struct {
		repo, commit, file string
	}{
		{"https://github.com/acme/infra.git", "https://github.com/acme/infra/commit/" + sha, "https://github.com/acme/infra/blob/" + sha + "/db/prod.yaml#L7"},
		{"https://github.com/acme/infra", "https://github.com/acme/infra/commit/" + sha, "https://github.com/acme/infra/blob/" + sha + "/db/prod.yaml#L7"},
		{"https://x-access-token:secret@github.com/acme/infra.git", "https://github.com/acme/infra/commit/" + sha, "https://github.com/acme/infra/blob/" + sha + "/db/prod.yaml#L7"},
		{"git@github.com:acme/infra.git", "https://github.com/acme/infra/commit/" + sha, "https://github.com/acme/infra/blob/" + sha + "/db/prod.yaml#L7"},
		{"ssh://git@github.com/acme/infra.git", "https://github.com/acme/infra/commit/" + sha, "https://github.com/acme/infra/blob/" + sha + "/db/prod.yaml#L7"},
		{"https://gitlab.com/group/sub/proj.git", "https://gitlab.com/group/sub/proj/-/commit/" + sha, "https://gitlab.com/group/sub/proj/-/blob/" + sha + "/db/prod.yaml#L7"},
		{"git@gitlab.com:group/proj.git", "https://gitlab.com/group/proj/-/commit/" + sha, "https://gitlab.com/group/proj/-/blob/" + sha + "/db/prod.yaml#L7"},
		{"https://gitlab.example.com/platform/apps.git", "https://gitlab.example.com/platform/apps/-/commit/" + sha, "https://gitlab.example.com/platform/apps/-/blob/" + sha + "/db/prod.yaml#L7"},
		{"https://git.example.com:8443/team/repo.git", "https://git.example.com:8443/team/repo/commit/" + sha, "https://git.example.com:8443/team/repo/blob/" + sha + "/db/prod.yaml#L7"},
		// Unknown forges: no link rather than a wrong one.
		{"https://git.example.com/team/repo", "", ""},
		{"http://git.example.com/team/repo.git", "", ""},
		{"git@git.example.com:team/repo.git", "", ""},
		{"file:///srv/repo", "", ""},
		{"./examples/repo", "", ""},
		{"javascript:alert(1)//github.com/a/b.git", "", ""},
		{"", "", ""},
	}
	for _, tc := range cases {
		if got := makeRevision(tc.repo, sha).URL; got != tc.commit {
			t.Errorf("commit of %q: %q, want %q", tc.repo, got, tc.commit)
		}
		if got := fileLink(tc.repo, sha, "db/prod.yaml", 7); got != tc.file {
			t.Errorf("file of %q: %q, want %q", tc.repo, got, tc.file)
		}
	}
	// Only commit ids become links.
	for _, rev := range []string{"main", "v1.2.3", "abc", "<script>", "../../x"} {
		if u := makeRevision("https://github.com/acme/infra.git", rev).URL; u != "" {
			t.Errorf("revision %q linked as %q", rev, u)
		}
	}
	if r := makeRevision("https://github.com/a/b", sha); r.Short != "4f1c2a9e8b" || r.Full != sha {
		t.Errorf("revision %+v", r)
	}
	// A digest (an OCI artifact's) shows its algorithm and 12 hex digits, and links nowhere.
	digest := "sha256:0123456789ab" + strings.Repeat("c", 52)
	if r := makeRevision("oci://ghcr.io/acme/config", digest); r.Short != "sha256:0123456789ab" || r.URL != "" {
		t.Errorf("digest revision %+v", r)
	}
	if u := fileLink("https://github.com/a/b", sha, "a b/c#d.yaml", 0); u != "https://github.com/a/b/blob/"+sha+"/a%20b/c%23d.yaml" {
		t.Errorf("escaped file link %q", u)
	}
}

func TestExternalURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://github.com/acme/infra/actions/runs/1": "https://github.com/acme/infra/actions/runs/1",
		"http://ci.internal/job/7":                     "http://ci.internal/job/7",
		" https://x.example/ ":                         "https://x.example/",
		"javascript:alert(1)":                          "",
		" JaVaScRiPt:alert(1)":                         "",
		"data:text/html,<script>alert(1)</script>":     "",
		"//evil.example/x":                             "",
		"/relative":                                    "",
		"https://user:pw@x.example/":                   "",
		"https:///nohost":                              "",
		"vbscript:msgbox":                              "",
	} {
		if got := externalURL(raw); got != want {
			t.Errorf("externalURL(%q) = %q, want %q", raw, got, want)
		}
	}
	if u := runURL(json.RawMessage(`{"runURL":"javascript:alert(1)","webURL":"https://gitlab.com/p/-/pipelines/3"}`)); u != "https://gitlab.com/p/-/pipelines/3" {
		t.Errorf("runURL %q", u)
	}
	if u := runURL(json.RawMessage(`[1]`)); u != "" {
		t.Errorf("runURL of an array %q", u)
	}
}

func TestDisplayURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://x-access-token:secret@github.com/acme/infra.git?token=t#f": "https://github.com/acme/infra.git",
		"git@github.com:acme/infra.git":                                     "git@github.com:acme/infra.git",
		"./examples/repo":                                                   "./examples/repo",
	} {
		if got := displayURL(raw); got != want {
			t.Errorf("displayURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestViewFormats(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 3, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		time.Second: "just now", 42 * time.Second: "42 s ago", 5 * time.Minute: "5 min ago", 3 * time.Hour: "3 h ago",
		50 * time.Hour: "2 days ago", -10 * time.Minute: "in 10 min",
	} {
		if got := relTime(now.Add(-d), now); got != want {
			t.Errorf("relTime(-%v) = %q, want %q", d, got, want)
		}
	}
	for ms, want := range map[int64]string{340: "340 ms", 1234: "1.2 s", 184000: "3 min 4 s", 3*3600000 + 60000: "3 h 1 min"} {
		if got := duration(ms); got != want {
			t.Errorf("duration(%d) = %q, want %q", ms, got, want)
		}
	}
	if got := firstLine("  first\nsecond", 100); got != "first…" {
		t.Errorf("firstLine %q", got)
	}
	if got := firstLine("ääääää", 3); got != "äää…" {
		t.Errorf("firstLine cut %q", got)
	}
	if got := prettyJSON(json.RawMessage(`{"a":[1,2]}`)); got != "{\n  \"a\": [\n    1,\n    2\n  ]\n}" {
		t.Errorf("prettyJSON %q", got)
	}
	got := outputsOf(json.RawMessage(`{"z":"https://x.example/r","a":{"k":1},"m":"javascript:alert(1)"}`))
	want := []output{{Key: "a", Value: "{\n  \"k\": 1\n}", Multi: true}, {Key: "m", Value: "javascript:alert(1)"},
		{Key: "z", Value: "https://x.example/r", URL: "https://x.example/r"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("outputsOf %+v", got)
	}
	if phaseClass(`"><script>`) != "unknown" || phaseClass("Failed") != "failed" {
		t.Error("phaseClass")
	}
	for c, want := range map[status.Condition]string{
		{Type: "Ready", Status: "True"}: "ok", {Type: "Ready", Status: "False"}: "bad", {Type: "Stalled", Status: "True"}: "bad",
		{Type: "Stalled", Status: "False"}: "ok", {Type: "Reconciling", Status: "True"}: "progress", {Type: "Ready", Status: "Unknown"}: "unknown",
	} {
		if got := condClass(c); got != want {
			t.Errorf("condClass(%+v) = %q, want %q", c, got, want)
		}
	}
	if got := listPath("phase", "Failed", "q", "", "label", "a=b,c in (x)"); got != "/resources?label=a%3Db%2Cc+in+%28x%29&phase=Failed" {
		t.Errorf("listPath %q", got)
	}
	if got := resourcePath("ns", "Kind", "a/b"); got != "/resources/ns/Kind/a%2Fb" {
		t.Errorf("resourcePath %q", got)
	}
}

func TestConfigState(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	for _, tc := range []struct {
		name string
		c    store.ReplicaConfig
		want string
	}{
		{"running, nothing refused", store.ReplicaConfig{Hash: "abc", LoadedAt: t0}, ""},
		{"refused: the hash is the older load's", store.ReplicaConfig{Hash: "abc", LoadedAt: t0, Error: "sources[0].name: bad", ErrorAt: t1}, "reload refused"},
		{"refused before any load recorded", store.ReplicaConfig{Error: "bad", ErrorAt: t1}, "reload refused"},
		{"applied in part: hash and errors at once", store.ReplicaConfig{Hash: "def", LoadedAt: t1, Error: "source b: start: no folder", ErrorAt: t1}, "applied in part"},
		{"applied, blocks wait for a restart", store.ReplicaConfig{Hash: "def", LoadedAt: t1, Error: "restart required: log changed in the file", ErrorAt: t1}, "restart required"},
	} {
		if got := configState(tc.c); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
