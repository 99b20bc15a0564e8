package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// approvers are who the approval tests call as, by the X-Test-Identity header.
var approvers = map[string]auth.Identity{
	"release-bot": {Kind: "token", Name: "release-bot", Role: auth.Viewer, Namespaces: []string{"alpha"}},
	"ci-bot":      {Kind: "token", Name: "ci-bot", Role: auth.Admin, Namespaces: []string{auth.AllNamespaces}},
	"dora":        {Kind: "user", Name: "dora@example.com", Email: "dora@example.com", Groups: []string{"dba"}, Role: auth.Viewer, Namespaces: []string{"alpha"}},
	"ann":         {Kind: "user", Name: "ann@example.com", Email: "ann@example.com", Groups: []string{"dba"}, Role: auth.Operator, Namespaces: []string{"alpha"}},
	"beta-dba":    {Kind: "user", Name: "bob@example.com", Email: "bob@example.com", Groups: []string{"dba"}, Role: auth.Admin, Namespaces: []string{"beta"}},
}

// planHash is the hash of the plan that waits in setupApprovals.
const planHash = "0123456789abcdef0123"

// setupApprovals serves setup's resources with auth (approvers), alpha/Queue/q000 gated.
func setupApprovals(t *testing.T) (*httptest.Server, *store.Store) {
	t.Helper()
	_, st := setup(t, 4) // q000, q002 in alpha; q001, q003 in beta
	gate(t, st, "alpha", "q000")
	return serveAs(t, st, approvers), st
}

// getJSON decodes the answer of GET u as as into v and returns its status.
// gate writes an approval request of namespace/Queue/name as the reconciler does: waiting for
// one approval from group dba or token release-bot, not by the commit's author
// (ann@example.com), on a plan whose text quotes knownSecret.
func gate(t *testing.T, st *store.Store, namespace, name string) {
	t.Helper()
	_, err := st.Pool().Exec(context.Background(), `INSERT INTO approval_requests (resource_id, generation, change_type, revision,
		plan_hash, plan, decision, policy, message, requirements, author_name, author_email)
		SELECT id, generation, 'update', 'abc123', $1,
		  '{"available":true,"changes":true,"counted":true,"add":0,"change":0,"destroy":1,"replace":1,"summary":"1 to replace, 1 to destroy","text":"-/+ queue (password `+knownSecret+`)"}',
		  'requireApproval', 'needs-dba', 'a DBA approves replacing a queue',
		  '[{"policy":"needs-dba","count":1,"from":[{"group":"dba"},{"token":"release-bot"}],"notAuthor":true}]',
		  'Ann', 'ann@example.com'
		FROM resources WHERE namespace = $2 AND name = $3`, planHash, namespace, name)
	if err != nil {
		t.Fatal(err)
	}
}

func getJSON(t *testing.T, u, as string, v any) int {
	t.Helper()
	code, b := getAs(t, http.DefaultClient, u, as)
	if v != nil && code == http.StatusOK {
		if err := json.Unmarshal([]byte(b), v); err != nil {
			t.Fatalf("%s: %v: %s", u, err, b)
		}
	}
	return code
}

func TestApprovalsRead(t *testing.T) {
	t.Parallel()
	srv, st := setupApprovals(t)
	// A denied change of alpha does not wait: the list shows it only when asked for.
	gate(t, st, "alpha", "q002")
	if _, err := st.Pool().Exec(context.Background(), `UPDATE approval_requests SET state = 'denied', decision = 'deny'
		WHERE resource_id = (SELECT id FROM resources WHERE namespace = 'alpha' AND name = 'q002')`); err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []wire.Approval }
	for as, want := range map[string]int{"dora": 1, "beta-dba": 0, "ci-bot": 1} {
		for _, q := range []string{"?state=pending", ""} {
			if code := getJSON(t, srv.URL+"/api/v1/approvals"+q, as, &list); code != 200 || len(list.Items) != want {
				t.Errorf("approvals%s as %s: %d, %d items; want %d", q, as, code, len(list.Items), want)
			}
		}
	}
	if code := getJSON(t, srv.URL+"/api/v1/approvals?state=denied", "dora", &list); code != 200 || len(list.Items) != 1 || list.Items[0].Name != "q002" {
		t.Errorf("denied changes: %d, %+v", code, list.Items)
	}
	if _, err := st.Pool().Exec(context.Background(), `DELETE FROM approval_requests WHERE state = 'denied'`); err != nil {
		t.Fatal(err)
	}
	if code := getJSON(t, srv.URL+"/api/v1/approvals?state=maybe", "dora", nil); code != http.StatusBadRequest {
		t.Errorf("an unknown state: %d", code)
	}
	getJSON(t, srv.URL+"/api/v1/approvals", "dora", &list)
	if a := list.Items[0]; a.Namespace != "alpha" || a.Kind != "Queue" || a.Name != "q000" || a.Policy != "needs-dba" || a.State != "pending" ||
		a.Plan.Text != "" || a.Plan.Replace != 1 || len(a.Requires) != 1 ||
		a.Requires[0] != "1 approval from group dba or token release-bot, not by the commit's author" {
		t.Errorf("listed approval: %+v", a)
	}

	var res wire.Resource
	if code := getJSON(t, srv.URL+"/api/v1/resources/alpha/queue/q000", "dora", &res); code != 200 || res.Approval == nil {
		t.Fatalf("resource: %d, approval %+v", code, res.Approval)
	}
	if a := res.Approval; a.PlanHash != planHash || a.Author.Email != "ann@example.com" || a.Plan.Text != "-/+ queue (password ***)" ||
		a.Decision != "requireApproval" || len(a.Approvals) != 0 {
		t.Errorf("resource's approval: %+v", a)
	}
	var other wire.Resource
	if getJSON(t, srv.URL+"/api/v1/resources/alpha/queue/q002", "dora", &other); other.Approval != nil || other.Metadata.Name != "q002" {
		t.Errorf("a resource nothing gates shows approval %+v", other.Approval)
	}
}

func TestApprovalVotes(t *testing.T) {
	t.Parallel()
	srv, st := setupApprovals(t)
	vote := func(path, as, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/resources/"+path, strings.NewReader(body))
		req.Header.Set("X-Test-Identity", as)
		code, b := send(t, req)
		return code, string(b)
	}
	for _, c := range []struct {
		name, path, as, body string
		code                 int
		says                 string
	}{
		{"a token outside approvals.from", "alpha/queue/q000/approve", "ci-bot", `{}`, 403,
			"policy needs-dba: token ci-bot may not approve (it needs 1 approval from group dba or token release-bot, not by the commit's author)"},
		{"the commit's author", "alpha/queue/q000/approve", "ann", `{"reason":"mine"}`, 403,
			"policy needs-dba: user ann@example.com is the commit's author, who may not approve"},
		{"a dba who does not see the namespace", "alpha/queue/q000/approve", "beta-dba", `{}`, 404, "resource alpha/queue/q000: not found"},
		{"another plan", "alpha/queue/q000/approve", "release-bot", `{"planHash":"feed"}`, 409, "the plan changed"},
		{"nothing waits", "alpha/queue/q002/approve", "release-bot", ``, 409, "no change waits for approval"},
		{"no such resource", "alpha/queue/nope/approve", "release-bot", ``, 404, "not found"},
		{"a bad body", "alpha/queue/q000/approve", "release-bot", `{"reasons":"x"}`, 400, "unknown field"},
	} {
		if code, b := vote(c.path, c.as, c.body); code != c.code || !strings.Contains(b, c.says) {
			t.Errorf("%s: %d %s; want %d %q", c.name, code, b, c.code, c.says)
		}
	}
	var runAt *string
	var votes int
	check := func(wantVotes int) {
		t.Helper()
		err := st.Pool().QueryRow(context.Background(), `SELECT q.run_at::text, (SELECT count(*) FROM approvals) FROM resources r JOIN resource_queue q ON q.id = r.id
			WHERE namespace = 'alpha' AND name = 'q000'`).Scan(&runAt, &votes)
		if err != nil || votes != wantVotes || (wantVotes > 0 && runAt == nil) {
			t.Fatalf("after the votes: run_at %v, %d votes, %v; want %d", runAt, votes, err, wantVotes)
		}
	}
	check(0) // refused votes write nothing
	if _, err := st.Pool().Exec(context.Background(), "UPDATE resource_queue SET run_at = NULL"); err != nil {
		t.Fatal(err)
	}

	code, b := vote("alpha/queue/q000/approve", "release-bot", `{"reason":"ok `+knownSecret+`","planHash":"`+planHash+`"}`)
	var a wire.Approval
	if code != 200 || json.Unmarshal([]byte(b), &a) != nil || len(a.Approvals) != 1 || a.Approvals[0].Actor != "token:release-bot" ||
		a.Approvals[0].Verdict != "approve" || a.Approvals[0].Reason != "ok ***" {
		t.Fatalf("approve: %d %s", code, b)
	}
	check(1)
	code, b = vote("alpha/Queue/q000/reject", "dora", `{"reason":"not today"}`)
	if code != 200 || json.Unmarshal([]byte(b), &a) != nil || len(a.Approvals) != 2 || a.Approvals[1].Verdict != "reject" ||
		a.Approvals[1].Actor != "user:dora@example.com" {
		t.Fatalf("reject: %d %s", code, b)
	}
	check(2)

	// A browser's cross-site POST is refused before it counts.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/resources/alpha/queue/q000/approve", nil)
	req.Header.Set("X-Test-Identity", "release-bot")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if code, _ := send(t, req); code != http.StatusForbidden {
		t.Errorf("a cross-site approve: %d", code)
	}
	check(2)
}

func TestPlanTextVisible(t *testing.T) {
	spec := json.RawMessage(`{"url":"db:5432"}`)
	for _, c := range []struct {
		name string
		n    store.Neighbours
		sc   store.Scope
		want bool
	}{
		{"every namespace", store.Neighbours{ResolvedSpec: spec}, store.Everything, true},
		{"no resolved spec yet", store.Neighbours{}, store.InNamespaces("alpha"), true},
		{"values of its own namespace", store.Neighbours{ResolvedSpec: spec, ResolvedOrigins: map[string][]string{}}, store.InNamespaces("alpha"), true},
		{"values of a namespace seen", store.Neighbours{ResolvedSpec: spec, ResolvedOrigins: map[string][]string{"spec.url": {"beta"}}},
			store.InNamespaces("alpha", "beta"), true},
		{"a value of a namespace not seen", store.Neighbours{ResolvedSpec: spec, ResolvedOrigins: map[string][]string{"spec.url": {"beta"}}},
			store.InNamespaces("alpha"), false},
		{"origins unknown", store.Neighbours{ResolvedSpec: spec}, store.InNamespaces("alpha"), false},
	} {
		if got := planTextVisible(c.n, c.sc); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDashboardApprovals(t *testing.T) {
	t.Parallel()
	srv, st := setupApprovals(t)
	c := formClient(t)
	resPage := srv.URL + "/resources/alpha/Queue/q000"

	// The overview counts what waits and links to the list of it.
	if _, body := getAs(t, c, srv.URL+"/", "dora"); !strings.Contains(body, `<a href="/resources?approval=pending">1 change waits for approval</a>`) {
		t.Errorf("overview: no count of the changes waiting:\n%s", body)
	}
	if _, body := getAs(t, c, srv.URL+"/resources?approval=pending", "dora"); !strings.Contains(body, "/resources/alpha/Queue/q000") ||
		strings.Contains(body, "/resources/alpha/Queue/q002") {
		t.Errorf("the list of what waits:\n%s", body)
	}

	// The resource page shows the request, the plan and, to who may vote, the buttons.
	code, body := getAs(t, c, resPage, "dora")
	for _, s := range []string{"Waiting for approval", "needs-dba", "a DBA approves replacing a queue",
		"1 approval from group dba or token release-bot, not by the commit&#39;s author", "queue (password ***)",
		`href="/resources/alpha/Queue/q000/confirm/approve"`, `href="/resources/alpha/Queue/q000/confirm/reject"`} {
		if code != 200 || !strings.Contains(body, s) {
			t.Errorf("resource page as dora: %d, no %q", code, s)
		}
	}
	if _, body := getAs(t, c, resPage, "ann"); strings.Contains(body, "/confirm/approve") ||
		!strings.Contains(body, "You may not vote on this change: policy needs-dba: user ann@example.com is the commit&#39;s author") {
		t.Errorf("the author's resource page offers a vote or does not say why not")
	}

	// The confirmation page carries the plan hash; the form votes with it.
	if code, _ := getAs(t, c, srv.URL+"/resources/alpha/Queue/q002/confirm/approve", "dora"); code != http.StatusConflict {
		t.Errorf("confirming an approval where nothing waits: %d", code)
	}
	code, body = getAs(t, c, resPage+"/confirm/approve", "dora")
	m := csrfField.FindStringSubmatch(body)
	if code != 200 || m == nil || !strings.Contains(body, `name="planHash" value="`+planHash+`"`) {
		t.Fatalf("confirmation page: %d\n%s", code, body)
	}
	submit := func(as, action, hash string) (int, string) {
		t.Helper()
		form := url.Values{"csrf": {m[1]}, "reason": {"looks right"}, "planHash": {hash}}
		req, _ := http.NewRequest(http.MethodPost, resPage+"/"+action, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		return doAs(t, c, req, as)
	}
	if code, body := submit("ann", "approve", planHash); code != http.StatusForbidden || !strings.Contains(body, "is the commit&#39;s author") {
		t.Errorf("the author's form: %d\n%s", code, body)
	}
	if code, body := submit("dora", "approve", "feed"); code != http.StatusConflict || !strings.Contains(body, "The plan changed") {
		t.Errorf("a form for another plan: %d\n%s", code, body)
	}
	if code, _ := submit("dora", "approve", planHash); code != http.StatusSeeOther {
		t.Fatalf("approve form: %d", code)
	}
	if _, body := getAs(t, c, resPage, "dora"); !strings.Contains(body, "<strong>approve</strong> by user:dora@example.com") ||
		!strings.Contains(body, "looks right") {
		t.Errorf("the vote is not shown on the resource page")
	}
	var verdicts []string
	rows, _ := st.Pool().Query(context.Background(), "SELECT verdict || ' ' || actor FROM approvals ORDER BY id")
	for rows.Next() {
		var v string
		_ = rows.Scan(&v)
		verdicts = append(verdicts, v)
	}
	if strings.Join(verdicts, ",") != "approve user:dora@example.com" {
		t.Errorf("votes recorded: %q", verdicts)
	}
}
