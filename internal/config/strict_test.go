package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trueup-dev/trueup/sources/gitsource"
)

// TestUnknownKeyInEveryBlock builds a config that writes every block of Config (from its
// yaml tags, so a block added later is covered too), then, for each mapping in it, adds an
// unknown key there: Parse must refuse it, naming the key and its line.
func TestUnknownKeyInEveryBlock(t *testing.T) {
	t.Parallel()
	free := map[*yaml.Node]bool{}
	root := sampleNode(reflect.TypeOf(Config{}), free)
	var maps []*yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode && !free[n] {
			maps = append(maps, n)
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(root)
	if len(maps) < 30 {
		t.Fatalf("only %d blocks generated", len(maps))
	}
	seenPrune := false
	for i, m := range maps {
		m.Content = append(m.Content, scalar("zzUnknownKey"), scalar("1"))
		text, err := yaml.Marshal(root)
		m.Content = m.Content[:len(m.Content)-2]
		if err != nil {
			t.Fatal(err)
		}
		var line int
		for n, l := range strings.Split(string(text), "\n") {
			if strings.Contains(l, "zzUnknownKey") {
				line = n + 1
			}
		}
		if regexp.MustCompile(`allowEmpty: true\n\s+zzUnknownKey`).Match(text) {
			seenPrune = true
		}
		_, err = Parse(text, t.TempDir(), func(string) string { return "value" })
		want := fmt.Sprintf("line %d: field zzUnknownKey not found", line)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("block %d: error %v, want %q in:\n%s", i, err, want, text)
		}
	}
	if !seenPrune {
		t.Error("no case put the unknown key inside prune:")
	}
}

// TestUnknownPruneKey: the reproduction of issue 19 — a misspelt key inside prune: was
// accepted (Prune's UnmarshalYAML decoded without KnownFields).
func TestUnknownPruneKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, prune, want string }{
		{"misspelt", "{allowEmpti: true}", "line 4: field allowEmpti not found in Prune"},
		{"block form", "\n      enabled: true\n      maxFractio: 0.2", "line 6: field maxFractio not found in Prune"},
		{"allowEmpty", "{allowEmpty: true}", ""},
	} {
		_, err := Parse([]byte("sources:\n  - name: a\n    dir: {path: x}\n    prune: "+tc.prune+"\n"), t.TempDir(), env(nil))
		if tc.want == "" && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

var (
	durationType = reflect.TypeOf(time.Duration(0))
	memoryType   = reflect.TypeOf(MemoryLimit{})
	idType       = reflect.TypeOf(gitsource.NumericID(0))
)

// sampleNode is a YAML value of type t with every field written: a mapping per struct, one
// element per list. Free-form values (maps, plugin configs) are left empty and noted in
// free: their keys are not the config's to check.
func sampleNode(t reflect.Type, free map[*yaml.Node]bool) *yaml.Node {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case durationType:
		return scalar("1s")
	case memoryType:
		return scalar("auto")
	case idType:
		return scalar("1")
	}
	switch t.Kind() {
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		for k := range yamlKeysOrdered(t) {
			f, _ := fieldByKey(t, k)
			m.Content = append(m.Content, scalar(k), sampleNode(f.Type, free))
		}
		return m
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			n := &yaml.Node{Kind: yaml.MappingNode}
			free[n] = true
			return n
		}
		return &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{sampleNode(t.Elem(), free)}}
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode}
		free[n] = true
		return n
	case reflect.Bool:
		return scalar("true")
	case reflect.Int, reflect.Int64, reflect.Float64:
		if t.Kind() == reflect.Float64 {
			return scalar("0.5")
		}
		return scalar("1")
	default:
		return scalar("x")
	}
}

var tagName = regexp.MustCompile(`^[^,]*`)

// yamlKeysOrdered yields the yaml keys of t's fields in field order.
func yamlKeysOrdered(t reflect.Type) func(func(string) bool) {
	return func(yield func(string) bool) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := tagName.FindString(f.Tag.Get("yaml"))
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			if !yield(name) {
				return
			}
		}
	}
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); tagName.FindString(f.Tag.Get("yaml")) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// TestPruneMergeKey: a YAML merge key inside prune: brings in the keys of the mapping (or
// mappings) it names; those are checked, not the key "<<" itself.
func TestPruneMergeKey(t *testing.T) {
	t.Parallel()
	head := "sources:\n  - name: a\n    dir: &q {path: x}\n    prune: &p {allowEmpty: true, maxFraction: 0.3}\n  - name: b\n    dir: {path: y}\n"
	for _, tc := range []struct{ name, prune, want string }{
		{"one mapping", "    prune:\n      <<: *p\n      maxFraction: 0.2\n", ""},
		{"a list of mappings", "    prune: {<<: [*p], enabled: true}\n", ""},
		{"a merged unknown key", "    prune:\n      <<: [*p, *q]\n", "line 3: field path not found in Prune"},
	} {
		cfg, err := Parse([]byte(head+tc.prune), t.TempDir(), env(nil))
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if p := cfg.Sources[1].Prune; !p.AllowEmpty {
			t.Errorf("%s: merged prune %+v", tc.name, p)
		}
	}
}
