package refdoc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
)

func TestYAMLType(t *testing.T) {
	t.Parallel()
	type named struct{ A int }
	type memory struct{ Bytes int64 }
	scalars := map[reflect.Type]string{reflect.TypeFor[memory](): "string"}
	for _, tc := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[string](), "string"},
		{reflect.TypeFor[bool](), "boolean"},
		{reflect.TypeFor[int](), "integer"},
		{reflect.TypeFor[int64](), "integer"},
		{reflect.TypeFor[float64](), "number"},
		{reflect.TypeFor[*float64](), "number"},
		{reflect.TypeFor[time.Duration](), "duration"},
		{reflect.TypeFor[*time.Duration](), "duration"},
		{reflect.TypeFor[json.RawMessage](), "mapping"},
		{reflect.TypeFor[[]string](), "list of strings"},
		{reflect.TypeFor[[]named](), "list of mappings"},
		{reflect.TypeFor[[]bool](), "list of booleans"},
		{reflect.TypeFor[[][]string](), "list of (list of strings)"},
		{reflect.TypeFor[map[string]string](), "mapping of string to string"},
		{reflect.TypeFor[named](), "mapping"},
		{reflect.TypeFor[*named](), "mapping"},
		{reflect.TypeFor[memory](), "string"},
		{reflect.TypeFor[*memory](), "string"},
	} {
		if got := YAMLType(tc.t, scalars); got != tc.want {
			t.Errorf("YAMLType(%s) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{5 * time.Second, "5s"},
		{time.Minute, "1m"},
		{10 * time.Minute, "10m"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{30 * 24 * time.Hour, "720h"},
		{time.Hour + 30*time.Minute, "1h30m"},
		{500 * time.Millisecond, "500ms"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// probe types stand in for a config: what the loader fills in appears as a default, what the
// text wrote does not.
type probeRoot struct {
	Dir     string        `yaml:"dir"`
	Workers int           `yaml:"workers"`
	Items   []probeItem   `yaml:"items"`
	Opt     *probeOpt     `yaml:"opt"`
	Absent  *probeOpt     `yaml:"absent"`
	Wait    time.Duration `yaml:"wait"`
	Skipped string        `yaml:"-"`
}

type probeItem struct {
	Name  string         `yaml:"name"`
	Every time.Duration  `yaml:"every"`
	TTL   *time.Duration `yaml:"ttl"`
}

type probeOpt struct {
	Mode string `yaml:"mode"`
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	ttl := 30 * time.Second
	raw := probeRoot{Workers: 4, Items: []probeItem{{Name: "a"}, {Name: "b"}}, Opt: &probeOpt{}}
	loaded := probeRoot{
		Dir: "/base/.state", Workers: 4, Wait: time.Hour, Skipped: "derived",
		Items: []probeItem{{Name: "a"}, {Name: "b", Every: time.Minute, TTL: &ttl}},
		Opt:   &probeOpt{Mode: "fast"},
	}
	got := Defaults(&loaded, &raw, "/base/")
	want := map[string]string{
		"dir":           ".state",
		"wait":          "1h",
		"items[].every": "1m",
		"items[].ttl":   "30s",
		"opt.mode":      "fast",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Defaults = %v, want %v", got, want)
	}
}

func TestSubjectAndIntro(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text, goName, key, want string
	}{
		{"subject", "ExternalURL is how people reach it.", "ExternalURL", "externalURL", "`externalURL` is how people reach it."},
		{"colon", "Notifications: how long they stay.", "Notifications", "notifications", "`notifications`: how long they stay."},
		{"longer word kept", "Timeouts bound calls.", "Timeout", "timeout", "Timeouts bound calls."},
		{"other subject", "Per request; default 10s", "Timeout", "timeout", "Per request; default 10s"},
		{"intro is", "Git is a Git repository source.", "Git", "git", "A Git repository source."},
		{"intro are", "AgeKeys are age identities.", "AgeKeys", "age", "Age identities."},
		{"intro verb", "Log configures log/slog.", "Log", "log", "`log` configures log/slog."},
	} {
		got := Subject(tc.text, tc.goName, tc.key)
		if strings.HasPrefix(tc.name, "intro") {
			got = Intro(tc.text, tc.goName, tc.key)
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSentence(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"default true":            "Default true.",
		"Already one.":            "Already one.",
		"`key` is x":              "`key` is x.",
		"github, gitlab or gitea": "Github, gitlab or gitea.",
		"":                        "",
	} {
		if got := Sentence(in); got != want {
			t.Errorf("Sentence(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSchemaText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"ref", `{"$ref": "#/components/schemas/ResourceList"}`, "[ResourceList](#resourcelist)"},
		{"string", `{"type": "string"}`, "string"},
		{"format", `{"type": "string", "format": "date-time"}`, "string (date-time)"},
		{"nullable", `{"type": ["string", "null"]}`, "string or null"},
		{"array of refs", `{"type": "array", "items": {"$ref": "#/components/schemas/Event"}}`, "array of [Event](#event)"},
		{"map", `{"type": "object", "additionalProperties": {"type": "string"}}`, "map of string to string"},
		{"closed object", `{"type": "object", "additionalProperties": false}`, "object"},
		{"inline object", `{"type": "object", "properties": {"csrf": {"type": "string"}, "next": {"type": "string"}}}`, "object with `csrf`, `next`"},
		{"enum", `{"type": "string", "enum": ["true", "false"]}`, "string, one of `true`, `false`"},
		{"enum without type", `{"enum": ["expired", "overflow"]}`, "string, one of `expired`, `overflow`"},
		{"bounds", `{"type": "integer", "minimum": 1, "maximum": 1000}`, "integer, ≥ 1, ≤ 1000"},
		{"pattern", `{"type": "string", "pattern": "^[0-9]+$"}`, "string, matching `^[0-9]+$`"},
		{"length", `{"type": "string", "maxLength": 200}`, "string, at most 200 characters"},
		{"const", `{"const": "no-store"}`, "const `no-store`"},
		{"oneOf", `{"oneOf": [{"$ref": "#/components/schemas/A"}, {"type": "null"}]}`, "[A](#a) or null"},
		{"allOf", `{"allOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}]}`, "[A](#a) and [B](#b)"},
		{"empty", `{}`, "any"},
	} {
		var s Schema
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := SchemaText(s); got != tc.want {
			t.Errorf("%s: SchemaText(%s) = %q, want %q", tc.name, tc.schema, got, tc.want)
		}
	}
}

func TestAPIPage(t *testing.T) {
	t.Parallel()
	doc := `{
  "info": {"title": "t", "version": "v1", "description": "The API <of x>."},
  "tags": [{"name": "things", "description": "Things."}],
  "security": [{"apiToken": []}, {}],
  "paths": {
    "/things/{name}": {
      "parameters": [],
      "post": {
        "summary": "Touch a thing", "tags": ["things"],
        "parameters": [{"$ref": "#/components/parameters/Name"}],
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
        "responses": {"404": {"$ref": "#/components/responses/NotFound"}, "200": {"description": "Done.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}
      }
    }
  },
  "components": {
    "parameters": {"Name": {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}},
    "responses": {"NotFound": {"description": "No such thing."}},
    "securitySchemes": {"apiToken": {"type": "http", "scheme": "bearer", "description": "A token."}},
    "schemas": {"Thing": {"type": "object", "required": ["z"], "properties": {"z": {"type": "string"}, "a": {"type": "integer"}}}}
  }
}`
	got, err := APIPage("make docs", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"The API &lt;of x>.",
		"| `apiToken` | http bearer | A token. |",
		"## Things endpoints\n\nThings.\n\n### `POST /things/{name}`\n\nTouch a thing.\n\nAuthentication: [`apiToken`](#authentication), anonymous.",
		"| `name` | path | string | yes |  |",
		"Request body (required): `application/json` [Thing](#thing).",
		"- **200** `application/json` [Thing](#thing): Done.\n- **404**: No such thing.",
		// Properties keep the document's order.
		"### Thing\n\n| Field | Type | Required | Description |\n|---|---|---|---|\n| `z` | string | yes |  |\n| `a` | integer | no |  |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q:\n%s", want, got)
		}
	}
}

func TestParseDesc(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		desc *prometheus.Desc
		want Metric
	}{
		{"labels", prometheus.NewDesc("x_total", `Things "quoted", {braced}.`, []string{"a", "b"}, nil),
			Metric{Name: "x_total", Help: `Things "quoted", {braced}.`, Labels: []string{"a", "b"}}},
		{"none", prometheus.NewDesc("y", "Y.", nil, nil), Metric{Name: "y", Help: "Y."}},
		{"constant label by name", prometheus.NewDesc("go_info", "Info.", nil, prometheus.Labels{"version": "go1.0"}),
			Metric{Name: "go_info", Help: "Info.", Labels: []string{"version"}}},
	} {
		got, err := ParseDesc(tc.desc.String())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ParseDesc(%s) = %+v, want %+v", tc.name, tc.desc, got, tc.want)
		}
	}
	if _, err := ParseDesc("something else"); err == nil {
		t.Error("ParseDesc accepted an unknown form")
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	// Vectors without a series collect nothing: their type comes from the collector.
	cs := []prometheus.Collector{
		prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "b_seconds", Help: "B."}, []string{"kind"}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "a_total", Help: "A."}, func() float64 { return 1 }),
		prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "c", Help: "C."}, []string{"x", "y"}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "d", Help: "D."}),
	}
	got, err := Metrics(cs)
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{
		{Name: "a_total", Type: "counter", Help: "A."},
		{Name: "b_seconds", Type: "histogram", Help: "B.", Labels: []string{"kind"}},
		{Name: "c", Type: "gauge", Help: "C.", Labels: []string{"x", "y"}},
		{Name: "d", Type: "gauge", Help: "D."},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Metrics = %+v, want %+v", got, want)
	}

	// A trueup series must be collected (or be a vector) for its type to be known.
	silent := silentCollector{prometheus.NewDesc("trueup_silent", "S.", nil, nil)}
	if _, err := Metrics([]prometheus.Collector{silent}); err == nil || !strings.Contains(err.Error(), "trueup_silent: no type") {
		t.Errorf("silent trueup collector: %v", err)
	}
	// Another's series a platform does not collect takes its type from its name.
	got, err = Metrics([]prometheus.Collector{
		silentCollector{prometheus.NewDesc("process_network_receive_bytes_total", "R.", nil, nil)},
		silentCollector{prometheus.NewDesc("process_open_fds", "F.", nil, nil)},
	})
	if err != nil || got[0].Type != "counter" || got[1].Type != "gauge" {
		t.Errorf("silent process collector: %+v, %v", got, err)
	}
}

// silentCollector describes a series it never collects.
type silentCollector struct{ desc *prometheus.Desc }

func (c silentCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c silentCollector) Collect(chan<- prometheus.Metric)    {}

func TestLongTextAndProse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"joined", "Loads DIR and\ncompares it.", "Loads DIR and compares it."},
		{"paragraphs", "One.\n\nTwo.", "One.\n\nTwo."},
		{"indented block", "It prints\n\n  + A  one\n  - B  two\n\nand a line.", "It prints\n\n```\n+ A  one\n- B  two\n```\n\nand a line."},
		{"escaped", "files *.yaml as <path>/<file>, SOPS_AGE_KEY", `files \*.yaml as &lt;path&gt;/&lt;file&gt;, SOPS\_AGE\_KEY`},
		{"code span kept", "run `make *_x` then *", "run `make *_x` then \\*"},
	} {
		if got := LongText(tc.in); got != tc.want {
			t.Errorf("%s: LongText(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
	if got, want := NoHTML("http://<listen>/ and `<kept>`"), "http://&lt;listen>/ and `<kept>`"; got != want {
		t.Errorf("NoHTML = %q, want %q", got, want)
	}
}

func TestCLIPage(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "tool", Short: "A tool"}
	root.PersistentFlags().String("server", "http://x", "the `URL` to call")
	get := &cobra.Command{Use: "get KIND", Short: "Get things", Long: "Gets them.", Example: "  tool get a\n  tool get b", Run: func(*cobra.Command, []string) {}}
	get.Flags().StringP("namespace", "n", "default", "the namespace")
	get.Flags().Bool("all", false, "every namespace")
	get.Flags().String("secret", "", "hidden")
	_ = get.Flags().MarkHidden("secret")
	hidden := &cobra.Command{Use: "internal", Hidden: true, Run: func(*cobra.Command, []string) {}}
	root.AddCommand(get, hidden)
	got := CLIPage("make docs", root)
	for _, want := range []string{
		"| [`tool get`](#tool-get) | Get things. |",
		"## tool get\n\nGet things.\n\n```\ntool get KIND [flags]\n```\n\nGets them.\n\nExamples:\n\n```\ntool get a\ntool get b\n```",
		"| `--all` | bool |  | every namespace |",
		"| `-n, --namespace` | string | `default` | the namespace |",
		"Global flags (`--server`) apply as well.",
		"| `--server` | string | `http://x` | the URL to call |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks %q:\n%s", want, got)
		}
	}
	for _, absent := range []string{"internal", "secret"} {
		if strings.Contains(got, absent) {
			t.Errorf("page shows hidden %q:\n%s", absent, got)
		}
	}
}

func TestStale(t *testing.T) {
	t.Parallel()
	if err := Stale("docs/reference/x.md", []byte("a\nb\n"), "a\nb\n"); err != nil {
		t.Errorf("equal pages: %v", err)
	}
	err := Stale("docs/reference/x.md", []byte("a\nold\n"), "a\nnew\n")
	if err == nil || !strings.HasPrefix(err.Error(), "docs/reference/x.md is out of date: run make docs\nline 2 is\n\told\n") {
		t.Errorf("changed page: %v", err)
	}
	if err := Stale("docs/reference/x.md", nil, "a\n"); err == nil {
		t.Error("a missing page passes")
	}
}

func TestAnchor(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"sources[].git.auth":  "sourcesgitauth",
		"trueup config check": "trueup-config-check",
		"Health":              "health",
		"GET /api/v1/sources": "get-apiv1sources",
	} {
		if got := anchor(in); got != want {
			t.Errorf("anchor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckAnchors(t *testing.T) {
	t.Parallel()
	ok := "# Page\n\n## `a.b`\n\nSee [a.b](#ab).\n\n```yaml\n# a comment, not a heading\n```\n\n## Page two\n"
	if err := CheckAnchors("ok.md", ok); err != nil {
		t.Errorf("CheckAnchors: %v", err)
	}
	bad := "## Health\n\n### health\n\nSee [x](#missing).\n"
	err := CheckAnchors("bad.md", bad)
	if err == nil || !strings.Contains(err.Error(), "bad.md:3: a second heading with the anchor #health") ||
		!strings.Contains(err.Error(), "the link #missing names no heading") {
		t.Errorf("CheckAnchors = %v", err)
	}
}
