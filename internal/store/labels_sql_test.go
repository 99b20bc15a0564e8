package store

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/labelsel"
)

// TestLabelSelectorSQLMatchesLabelsel lists random selectors of every operator over random
// string labels (empty values and keys with a prefix among them): the SQL the store builds
// selects exactly the resources labelsel.Matches accepts.
func TestLabelSelectorSQLMatchesLabelsel(t *testing.T) {
	t.Parallel()
	st := openTest(t)
	ctx := context.Background()
	rng := rand.New(rand.NewSource(1))
	keys := []string{"a", "b", "example.com/c"}
	vals := []string{"x", "y", "", "1", "true"}
	labels := map[string]map[string]string{}
	for i := 0; i < 200; i++ {
		l := map[string]string{}
		for _, k := range keys {
			if rng.Intn(3) > 0 {
				l[k] = vals[rng.Intn(len(vals))]
			}
		}
		name := fmt.Sprintf("r%03d", i)
		labels[name] = l
		if _, err := st.pool.Exec(ctx, `INSERT INTO resources (namespace, kind, name, api_version, source, spec_hash, meta_hash, labels)
			VALUES ('ns','Thing',$1,'v1','s','h','h',$2)`, name, l); err != nil {
			t.Fatal(err)
		}
	}
	ops := []func(k, v, w string) string{
		func(k, v, w string) string { return k + "=" + v },
		func(k, v, w string) string { return k + "!=" + v },
		func(k, v, w string) string { return k },
		func(k, v, w string) string { return "!" + k },
		func(k, v, w string) string { return k + " in (" + v + "," + w + ")" },
		func(k, v, w string) string { return k + " notin (" + v + "," + w + ")" },
	}
	for i := 0; i < 300; i++ {
		var terms []string
		for j := 0; j <= rng.Intn(2); j++ {
			terms = append(terms, ops[rng.Intn(len(ops))](keys[rng.Intn(len(keys))], vals[rng.Intn(len(vals))], vals[rng.Intn(len(vals))]))
		}
		sel := strings.Join(terms, ",")
		reqs, err := labelsel.Parse(sel)
		if err != nil {
			continue
		}
		var want []string
		for n, l := range labels {
			if labelsel.Matches(reqs, l) {
				want = append(want, n)
			}
		}
		sort.Strings(want)
		var got []string
		cont := ""
		for {
			items, next, err := st.ListResources(ctx, Everything, ResourceFilter{LabelSelector: sel, Limit: 1000, Continue: cont})
			if err != nil {
				t.Fatalf("%q: %v", sel, err)
			}
			for _, r := range items {
				got = append(got, r.Metadata.Name)
			}
			if next == "" {
				break
			}
			cont = next
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%q: sql %d rows, go %d rows", sel, len(got), len(want))
		}
	}
}
