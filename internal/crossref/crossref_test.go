package crossref

import (
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/graph"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	hostToStaging := config.ReferenceExpose{Namespace: "production", Kinds: []string{"Db"}, Outputs: []string{"host"},
		To: []config.ReferenceTo{{Namespace: "staging"}}}
	dbGroup := config.ReferenceExpose{Namespace: "prod-*", Kinds: []string{"*"}, Outputs: []string{"conn"},
		To: []config.ReferenceTo{{Namespace: "team-*"}, {Namespace: "qa"}}}
	everything := config.ReferenceExpose{Namespace: "*", Kinds: []string{"*"}, Outputs: []string{"*"}, To: []config.ReferenceTo{{Namespace: "*"}}}
	orders := graph.ID{Kind: "Db", Namespace: "production", Name: "orders"}
	orderOnly := config.ReferenceExpose{Namespace: "production", Kinds: []string{"Db"}, Outputs: []string{}, To: []config.ReferenceTo{{Namespace: "staging"}}}
	globbed := func(output string) config.ReferenceExpose {
		return config.ReferenceExpose{Namespace: "p", Kinds: []string{"Db"}, Outputs: []string{output}, To: []config.ReferenceTo{{Namespace: "s"}}}
	}
	dbP := graph.ID{Kind: "Db", Namespace: "p", Name: "x"}
	tests := []struct {
		name    string
		grants  []config.ReferenceExpose
		from    string
		target  graph.ID
		outputs []string
		refused string // "" allowed; else a part of the message
	}{
		{"same namespace needs no grant", nil, "production", orders, []string{"password"}, ""},
		{"same namespace dependsOn needs no grant", nil, "production", orders, nil, ""},
		{"no grant refuses an output", nil, "staging", orders, []string{"host"},
			"reference to Db/production/orders outputs host crosses from namespace staging to production without a grant: the controller config's references.expose needs {namespace: production, kinds: [Db], outputs: [host], to: [{namespace: staging}]}"},
		{"no grant refuses a dependsOn", nil, "staging", orders, nil,
			`dependsOn Db/production/orders crosses from namespace staging to production without a grant: the controller config's references.expose needs {namespace: production, kinds: [Db], outputs: [], to: [{namespace: staging}]}`},
		{"granted output", []config.ReferenceExpose{hostToStaging}, "staging", orders, []string{"host"}, ""},
		{"granted kind allows a dependsOn", []config.ReferenceExpose{hostToStaging}, "staging", orders, nil, ""},
		{"kind compares case-insensitively", []config.ReferenceExpose{hostToStaging}, "staging", graph.ID{Kind: "db", Namespace: "production", Name: "x"}, []string{"host"}, ""},
		{"another output of the granted kind", []config.ReferenceExpose{hostToStaging}, "staging", orders, []string{"host", "password"}, "outputs password crosses"},
		{"another namespace asking", []config.ReferenceExpose{hostToStaging}, "dev", orders, []string{"host"}, "from namespace dev"},
		{"another kind", []config.ReferenceExpose{hostToStaging}, "staging", graph.ID{Kind: "Cache", Namespace: "production", Name: "c"}, []string{"host"}, "kinds: [Cache]"},
		{"another dependency namespace", []config.ReferenceExpose{hostToStaging}, "staging", graph.ID{Kind: "Db", Namespace: "payments", Name: "p"}, nil, "to payments"},
		{"a granted segment allows the paths below it", []config.ReferenceExpose{dbGroup}, "team-a", graph.ID{Kind: "Db", Namespace: "prod-eu", Name: "x"}, []string{"conn.host", "conn"}, ""},
		{"a granted path does not allow its parent", []config.ReferenceExpose{{Namespace: "p", Kinds: []string{"Db"}, Outputs: []string{"conn.host"}, To: []config.ReferenceTo{{Namespace: "s"}}}},
			"s", graph.ID{Kind: "Db", Namespace: "p", Name: "x"}, []string{"conn"}, "outputs conn crosses"},
		{"a segment prefix is not a segment", []config.ReferenceExpose{dbGroup}, "qa", graph.ID{Kind: "Db", Namespace: "prod-eu", Name: "x"}, []string{"connection"}, "outputs connection"},
		{"second to entry", []config.ReferenceExpose{dbGroup}, "qa", graph.ID{Kind: "Db", Namespace: "prod-us", Name: "x"}, []string{"conn"}, ""},
		{"outputs granted by two entries", []config.ReferenceExpose{hostToStaging, {Namespace: "production", Kinds: []string{"Db"}, Outputs: []string{"port"},
			To: []config.ReferenceTo{{Namespace: "staging"}}}}, "staging", orders, []string{"host", "port"}, ""},
		{"outputs: [] allows a dependsOn", []config.ReferenceExpose{orderOnly}, "staging", orders, nil, ""},
		{"outputs: [] allows no output", []config.ReferenceExpose{orderOnly}, "staging", orders, []string{"host"}, "outputs host crosses"},
		{"a glob does not cross a dot", []config.ReferenceExpose{globbed("*host")}, "s", dbP, []string{"db.host"}, "outputs db.host crosses"},
		{"a glob does not cross a dot in a path", []config.ReferenceExpose{globbed("*.host")}, "s", dbP, []string{"a.b.host"}, "outputs a.b.host crosses"},
		{"a glob inside a segment", []config.ReferenceExpose{globbed("db*port")}, "s", dbP, []string{"db.password.port"}, "outputs db.password.port crosses"},
		{"a glob matches within its segment, and below what it matches", []config.ReferenceExpose{globbed("db*")}, "s", dbP, []string{"dbx", "dbx.host", "db"}, ""},
		{"a glob matches its segment only", []config.ReferenceExpose{globbed("db*")}, "s", dbP, []string{"cache.db"}, "outputs cache.db crosses"},
		{"a glob segment below a path", []config.ReferenceExpose{globbed("conn.h*")}, "s", dbP, []string{"conn.host", "conn.host.v4"}, ""},
		{"a glob segment below a path, another key", []config.ReferenceExpose{globbed("conn.h*")}, "s", dbP, []string{"conn.password"}, "outputs conn.password"},
		{"a glob segment does not allow its parent", []config.ReferenceExpose{globbed("conn.*")}, "s", dbP, []string{"conn"}, "outputs conn crosses"},
		{"a leading glob segment", []config.ReferenceExpose{globbed("*.host")}, "s", dbP, []string{"a.host", "b.host"}, ""},
		{"a leading glob segment, another key", []config.ReferenceExpose{globbed("*.host")}, "s", dbP, []string{"a.password"}, "outputs a.password"},
		{"star allows everything", []config.ReferenceExpose{everything}, "a", graph.ID{Kind: "K", Namespace: "b", Name: "n"}, []string{"x.y.z"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := Check(tc.grants, tc.from, tc.target, tc.outputs)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && err == nil:
				t.Fatal("allowed, want refused")
			case tc.refused != "" && !strings.Contains(err.Error(), tc.refused):
				t.Fatalf("message %q lacks %q", err, tc.refused)
			}
		})
	}
}
