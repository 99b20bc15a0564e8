package notify

import (
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/trueup-dev/trueup/internal/labelsel"
)

func TestRuleMatches(t *testing.T) {
	t.Parallel()
	sel, _ := labelsel.Parse("tier=critical")
	prod := Rule{Name: "prod", Events: []string{Failed, Recovered}, Namespaces: []string{"production"}, Kinds: []string{"DatabaseCluster"}, Selector: sel}
	base := Item{Event: Failed, Namespace: "production", Kind: "DatabaseCluster", Name: "main", Source: "infra", Labels: map[string]string{"tier": "critical"}}
	tests := []struct {
		name string
		rule Rule
		edit func(*Item)
		want bool
	}{
		{"all match", prod, func(*Item) {}, true},
		{"kind case-insensitive", prod, func(i *Item) { i.Kind = "databasecluster" }, true},
		{"other event", prod, func(i *Item) { i.Event = Drifted }, false},
		{"other namespace", prod, func(i *Item) { i.Namespace = "staging" }, false},
		{"other kind", prod, func(i *Item) { i.Kind = "Queue" }, false},
		{"label differs", prod, func(i *Item) { i.Labels = map[string]string{"tier": "low"} }, false},
		{"no labels", prod, func(i *Item) { i.Labels = nil }, false},
		{"empty rule matches all", Rule{Name: "all"}, func(i *Item) { i.Event = PruneSkipped; i.Kind = "Source" }, true},
		{"source selected", Rule{Sources: []string{"infra"}}, func(*Item) {}, true},
		{"source not selected", Rule{Sources: []string{"apps"}}, func(*Item) {}, false},
	}
	for _, tc := range tests {
		it := base
		tc.edit(&it)
		if got := tc.rule.Matches(it); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Minute)
	rules := []Rule{
		{Name: "all", Providers: []string{"slack", "hook"}},
		{Name: "failures", Providers: []string{"mail"}, Events: []string{Failed}},
	}
	item := func(id int64, ev, name, rev string, at time.Time, done ...string) Item {
		return Item{ID: id, Event: ev, Namespace: "ns", Kind: "Queue", Name: name, Revision: rev, CreatedAt: at, Done: done}
	}
	tests := []struct {
		name   string
		items  []Item
		window time.Duration
		want   []string // target event revision count
		held   int
	}{
		{"one failure to three targets", []Item{item(1, Failed, "a", "r1", old)}, time.Second,
			[]string{"all/slack Failed r1 1", "all/hook Failed r1 1", "failures/mail Failed r1 1"}, 0},
		{"done targets are skipped", []Item{item(1, Failed, "a", "r1", old, "all/slack", "failures/mail")}, time.Second,
			[]string{"all/hook Failed r1 1"}, 0},
		{"a burst on one revision is one message per target", []Item{item(1, Failed, "a", "r1", old), item(2, Failed, "b", "r1", old), item(3, Failed, "c", "r1", old)}, time.Second,
			[]string{"all/slack Failed r1 3", "all/hook Failed r1 3", "failures/mail Failed r1 3"}, 0},
		{"other revision, other event: other messages", []Item{item(1, Failed, "a", "r1", old), item(2, Failed, "b", "r2", old), item(3, Recovered, "c", "r1", old)}, time.Second,
			[]string{"all/slack Failed r1 1", "all/hook Failed r1 1", "failures/mail Failed r1 1", "all/slack Failed r2 1", "all/hook Failed r2 1", "failures/mail Failed r2 1",
				"all/slack Recovered r1 1", "all/hook Recovered r1 1"}, 0},
		{"a growing burst waits for the window", []Item{item(1, Recovered, "a", "r1", now.Add(-2*time.Second)), item(2, Recovered, "b", "r1", now)}, time.Second,
			nil, 2},
		{"a quiet burst goes", []Item{item(1, Recovered, "a", "r1", now.Add(-3*time.Second)), item(2, Recovered, "b", "r1", now.Add(-2*time.Second))}, time.Second,
			[]string{"all/slack Recovered r1 2", "all/hook Recovered r1 2"}, 0},
		{"a burst growing too long goes anyway", []Item{item(1, Recovered, "a", "r1", now.Add(-11*time.Second)), item(2, Recovered, "b", "r1", now)}, time.Second,
			[]string{"all/slack Recovered r1 2", "all/hook Recovered r1 2"}, 0},
		{"other revisions are not held", []Item{item(1, Recovered, "a", "r1", old), item(2, Recovered, "b", "r2", now)}, time.Second,
			[]string{"all/slack Recovered r1 1", "all/hook Recovered r1 1"}, 1},
		{"no window: no grouping, nothing held", []Item{item(1, Recovered, "a", "r1", now), item(2, Recovered, "b", "r1", now)}, 0,
			[]string{"all/slack Recovered r1 1", "all/hook Recovered r1 1", "all/slack Recovered r1 1", "all/hook Recovered r1 1"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			batches, held := Plan(tc.items, rules, now, tc.window)
			var got []string
			for _, b := range batches {
				got = append(got, b.Target()+" "+b.Event+" "+b.Revision+" "+itoa(len(b.Items)))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(held) != tc.held {
				t.Errorf("Plan = %q held %v\nwant %q held %d", got, held, tc.want, tc.held)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestCompose(t *testing.T) {
	t.Parallel()
	r := &Rule{Name: "prod"}
	one := Batch{Rule: r, Event: Failed, Revision: "0123456789abcdef", Items: []Item{{Namespace: "production", Kind: "DatabaseCluster", Name: "main", Phase: "Failed", Message: "disk full"}}}
	m, err := Compose(one, "https://trueup.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	if m.Title != "Failed: production/DatabaseCluster/main" || m.URL != "https://trueup.example.com/resources/production/DatabaseCluster/main" ||
		!strings.Contains(m.Text, "disk full") || !strings.Contains(m.Text, "Revision: 0123456789ab") {
		t.Errorf("single: %+v", m)
	}
	many := Batch{Rule: r, Event: Failed, Revision: "abc"}
	for i := range 300 {
		many.Items = append(many.Items, Item{Namespace: "ns", Kind: "Queue", Name: "q" + string(rune('a'+i%26))})
	}
	m, _ = Compose(many, "https://trueup.example.com")
	if m.Title != "300 resources failed on revision abc" || len(m.Resources) != maxListed || !strings.Contains(m.Text, "and 280 more") {
		t.Errorf("grouped: %q %d %q", m.Title, len(m.Resources), m.Text)
	}
	src := Batch{Rule: r, Event: SourceRejected, Revision: "abc", Items: []Item{{Kind: "Source", Name: "infra", Source: "infra", Message: "db.yaml:3: bad"}}}
	m, _ = Compose(src, "https://t.example")
	if m.URL != "https://t.example/sources/infra" || m.Title != "SourceRejected: source infra" {
		t.Errorf("source: %+v", m)
	}
	wait := Batch{Rule: r, Event: ApprovalRequired, Revision: "abc", Items: []Item{{Namespace: "production", Kind: "Database", Name: "main",
		Phase: "Pending", Message: "needs a DBA — plan 0123456789ab: 1 to replace; needs 1 approval from group dba"}}}
	m, _ = Compose(wait, "")
	if m.Title != "ApprovalRequired: production/Database/main" || !strings.Contains(m.Text, "needs 1 approval from group dba") ||
		!strings.Contains(m.Text, "trueup approve production/Database/main") {
		t.Errorf("approval required: %+v", m)
	}
	wait.Items = append(wait.Items, Item{Namespace: "production", Kind: "Database", Name: "other"})
	if m, _ = Compose(wait, ""); m.Title != "2 resources wait for approval on revision abc" {
		t.Errorf("grouped approval required: %q", m.Title)
	}
	r2 := &Rule{Name: "t", Template: template.Must(template.New("t").Parse("{{.Event}} {{.Resource}} at {{.Revision}}"))}
	m, _ = Compose(Batch{Rule: r2, Event: Failed, Revision: "abc", Items: one.Items}, "")
	if m.Text != "Failed production/DatabaseCluster/main at abc" || m.URL != "" {
		t.Errorf("template: %+v", m)
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		missing    bool
		attempts   int
		retryAfter time.Duration
		want       Verdict
	}{
		{"all delivered", false, 1, 0, Verdict{State: "sent"}},
		{"first failure", true, 1, 0, Verdict{State: "pending", Wait: time.Second}},
		{"third failure doubles", true, 3, 0, Verdict{State: "pending", Wait: 4 * time.Second}},
		{"retry-after wins", true, 1, 30 * time.Second, Verdict{State: "pending", Wait: 30 * time.Second}},
		{"retry-after capped", true, 1, 3 * time.Hour, Verdict{State: "pending", Wait: time.Hour}},
		{"backoff capped", true, 4, 0, Verdict{State: "pending", Wait: 8 * time.Second}},
		{"last attempt: dead", true, 5, 0, Verdict{State: "dead"}},
		{"delivered on the last attempt", false, 5, 0, Verdict{State: "sent"}},
	}
	for _, tc := range tests {
		if got := Decide(tc.missing, tc.attempts, 5, tc.retryAfter); got != tc.want {
			t.Errorf("%s: Decide = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := Backoff(30, 0); got != 5*time.Minute {
		t.Errorf("Backoff(30) = %s", got)
	}
}

// TestDeliveryID: the id is the same for the same target, event, revision and entries
// (whatever their order: a retry), and differs when any of them differs.
func TestDeliveryID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.UTC)
	r, other := &Rule{Name: "prod"}, &Rule{Name: "staging"}
	a, b := Item{ID: 1, CreatedAt: at, Name: "a"}, Item{ID: 2, CreatedAt: at.Add(time.Millisecond), Name: "b"}
	base := Batch{Rule: r, Provider: "hook", Event: Failed, Revision: "abc", Items: []Item{a, b}}
	id := base.DeliveryID()
	if len(id) != 32 {
		t.Fatalf("id %q: want 32 hex digits", id)
	}
	same := map[string]Batch{
		"again":                 base,
		"entries in any order":  {Rule: r, Provider: "hook", Event: Failed, Revision: "abc", Items: []Item{b, a}},
		"another attempt count": {Rule: r, Provider: "hook", Event: Failed, Revision: "abc", Items: []Item{{ID: 1, CreatedAt: at, Attempts: 3}, b}},
	}
	for name, x := range same {
		if got := x.DeliveryID(); got != id {
			t.Errorf("%s: id %s, want %s", name, got, id)
		}
	}
	c := Item{ID: 1, CreatedAt: at.Add(time.Microsecond)}
	differ := map[string]Batch{
		"another rule":               {Rule: other, Provider: "hook", Event: Failed, Revision: "abc", Items: []Item{a, b}},
		"another provider":           {Rule: r, Provider: "mail", Event: Failed, Revision: "abc", Items: []Item{a, b}},
		"another event":              {Rule: r, Provider: "hook", Event: Recovered, Revision: "abc", Items: []Item{a, b}},
		"another revision":           {Rule: r, Provider: "hook", Event: Failed, Revision: "abd", Items: []Item{a, b}},
		"an entry less":              {Rule: r, Provider: "hook", Event: Failed, Revision: "abc", Items: []Item{a}},
		"an entry more":              {Rule: r, Provider: "hook", Event: Failed, Revision: "abc", Items: []Item{a, b, {ID: 3, CreatedAt: at}}},
		"same id, another time (db)": {Rule: r, Provider: "hook", Event: Failed, Revision: "abc", Items: []Item{c, b}},
	}
	seen := map[string]string{id: "base"}
	for name, x := range differ {
		got := x.DeliveryID()
		if prev, ok := seen[got]; ok {
			t.Errorf("%s: id %s, the same as %s", name, got, prev)
		}
		seen[got] = name
	}
	if m, _ := Compose(base, ""); m.ID != id {
		t.Errorf("Compose: message id %q, want %q", m.ID, id)
	}
}

// TestPlanRetryKeepsMessage: a grouped message that was tried is rebuilt on retry from the
// same entries under the same id, even when entries of its group arrived meanwhile (they go
// in another message); its target delivered, the id is no longer used.
func TestPlanRetryKeepsMessage(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	const window = 5 * time.Second
	rules := []Rule{{Name: "all", Providers: []string{"hook"}}}
	item := func(id int64, at time.Duration) Item {
		return Item{ID: id, Event: Failed, Namespace: "ns", Kind: "Queue", Name: "q" + itoa(int(id)), Revision: "abc", CreatedAt: t0.Add(at)}
	}
	first, held := Plan([]Item{item(1, 0), item(2, time.Second)}, rules, t0.Add(6*time.Second), window)
	if len(first) != 1 || len(first[0].Items) != 2 || len(held) != 0 {
		t.Fatalf("first plan: %d batches, held %v; want one message about 1 and 2", len(first), held)
	}
	id := first[0].DeliveryID()
	// What the sender records before the first send.
	tried := func(it Item) Item { it.Deliveries = map[string]string{"all/hook": id}; return it }
	type msg struct {
		ids    string // the entries, in order
		sameID bool   // the first attempt's id
	}
	tests := []struct {
		name  string
		items []Item
		at    time.Duration
		want  []msg
		held  int
	}{
		{"retry with a newer entry due", []Item{tried(item(1, 0)), tried(item(2, time.Second)), item(3, 6500*time.Millisecond)}, 12 * time.Second,
			[]msg{{"1,2", true}, {"3", false}}, 0},
		{"retry with a newer entry held", []Item{tried(item(1, 0)), tried(item(2, time.Second)), item(3, 6500*time.Millisecond)}, 8 * time.Second,
			[]msg{{"1,2", true}}, 1},
		{"retry never held", []Item{tried(item(1, 0)), tried(item(2, time.Second))}, 2 * time.Second,
			[]msg{{"1,2", true}}, 0},
		{"target delivered", []Item{func() Item { it := tried(item(1, 0)); it.Done = []string{"all/hook"}; return it }(), tried(item(2, time.Second))}, 12 * time.Second,
			[]msg{{"2", true}}, 0},
	}
	for _, tc := range tests {
		got, held := Plan(tc.items, rules, t0.Add(tc.at), window)
		if len(got) != len(tc.want) || len(held) != tc.held {
			t.Errorf("%s: %d messages, %d held; want %d, %d", tc.name, len(got), len(held), len(tc.want), tc.held)
			continue
		}
		for i, b := range got {
			var ids []string
			for _, it := range b.Items {
				ids = append(ids, itoa(int(it.ID)))
			}
			if s := strings.Join(ids, ","); s != tc.want[i].ids {
				t.Errorf("%s: message %d about %s, want %s", tc.name, i, s, tc.want[i].ids)
			}
			if (b.DeliveryID() == id) != tc.want[i].sameID {
				t.Errorf("%s: message %d has id %s (first attempt %s), want the same: %v", tc.name, i, b.DeliveryID(), id, tc.want[i].sameID)
			}
			if m, _ := Compose(b, ""); m.ID != b.DeliveryID() {
				t.Errorf("%s: message %d composed with id %s, want %s", tc.name, i, m.ID, b.DeliveryID())
			}
		}
	}
}
