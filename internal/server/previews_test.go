package server

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/previewresult"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/wire"
)

// previewResult is a preview of web with a change in staging, and an add and a delete in
// production; the texts carry markup that pages must escape.
func previewResult() previewresult.Result {
	return previewresult.Result{
		Counts: previewresult.Counts{Add: 1, Change: 1, Delete: 1, Unchanged: 1, Invalid: 0},
		Changes: []previewresult.Change{
			{Op: "add", Kind: "Queue", Namespace: "production", Name: "prd-new", File: "web.yaml", Line: 12,
				Diff: "--- /dev/null\n+++ production/Queue/prd-new\n@@ -0,0 +1 @@\n+size: 3\n",
				Plan: &previewresult.Plan{Status: "planned", Changes: true, Summary: "1 to add", Text: "+ queue prd-new"},
				Gate: &previewresult.Gate{Decision: "requireApproval", Policy: "prod-needs-review", Message: "production changes are reviewed",
					Requires: []string{"1 approval from group sre (policy prod-needs-review)"}}},
			{Op: "change", Kind: "Queue", Namespace: "staging", Name: "stg-a", File: "web.yaml", Line: 2,
				Diff: "--- staging/Queue/stg-a\n+++ staging/Queue/stg-a\n@@ -1 +1 @@\n-size: 1\n+size: 2 # <script>alert(1)</script>\n",
				Plan: &previewresult.Plan{Status: "planned", Changes: true, Summary: "0 to add, 1 to change", Text: "~ size: 1 -> 2 <img src=x onerror=alert(1)>"}},
			{Op: "delete", Kind: "Queue", Namespace: "production", Name: "prd-a", File: "web.yaml", Line: 8,
				Diff: "--- production/Queue/prd-a\n+++ /dev/null\n", Plan: &previewresult.Plan{Status: "no-plan"},
				Gate: &previewresult.Gate{Decision: "deny", Policy: "no-prod-deletes", Message: "production queues stay <b>"}},
		},
		Errors: []previewresult.Error{},
		Warnings: []string{"prune guard: 1 deletion of 3 resources (33%) would be skipped <b>",
			"Queue production/prd-kept (web.yaml:20) is no longer declared; kept: trueup.dev/prune: disabled"},
		WarningNamespaces: []string{"", "production"},
	}
}

// savePreviews stores web#7 (succeeded), web#8 (pending, no result), web#9 (failed, with
// errors) and prodsrc#3.
func savePreviews(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	res, err := json.Marshal(previewResult())
	if err != nil {
		t.Fatal(err)
	}
	invalid, _ := json.Marshal(previewresult.Result{Counts: previewresult.Counts{Invalid: 2}, Changes: []previewresult.Change{},
		Errors: []previewresult.Error{{File: "web.yaml", Line: 4, Path: "spec.size", Message: "must be an integer"}, {Message: "no file <here>"}}})
	for _, p := range []store.Preview{
		{Source: "web", Number: 9, Provider: "github", Title: "broken", URL: "https://github.com/acme/web/pull/9", HeadSHA: "9999999999999999999999999999999999999999",
			BaseRevision: "rev1", State: store.PreviewFailed, Message: "2 validation errors", Result: invalid},
		{Source: "web", Number: 8, Provider: "github", Title: "wip", URL: "javascript:alert(1)", HeadSHA: "8888888888888888888888888888888888888888",
			BaseRevision: "rev1", State: store.PreviewPending},
		{Source: "web", Number: 7, Provider: "github", Title: `Bigger queues <script>alert("t")</script>`, URL: "https://github.com/acme/web/pull/7",
			HeadSHA: "7777777777777777777777777777777777777777", BaseRevision: "rev1", State: store.PreviewSucceeded,
			Message: "1 to add, 1 to change, 1 to delete", Result: res, CommentURL: "https://github.com/acme/web/pull/7#issuecomment-1"},
		{Source: "prodsrc", Number: 3, Provider: "gitlab", Title: "production only", HeadSHA: "3333333333333333333333333333333333333333",
			State: store.PreviewSucceeded, Result: res},
	} {
		if _, err := st.SavePreview(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPreviewsAPI(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)
	savePreviews(t, e.st)
	const admin = "admin:*"

	code, body := e.get(t, admin, "/api/v1/sources/web/previews")
	var list struct{ Items []wire.Preview }
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Items) != 3 || list.Items[0].Number != 7 || list.Items[1].Number != 8 || list.Items[2].Number != 9 {
		t.Fatalf("list order: %s", body)
	}
	if c := list.Items[0].Counts; c == nil || c.Add != 1 || c.Change != 1 || c.Delete != 1 || list.Items[0].Result != nil {
		t.Fatalf("list item 7: %s", body)
	}
	if list.Items[1].Counts != nil || strings.Contains(body, `"result"`) || strings.Contains(body, "commentId") {
		t.Fatalf("list: a pending preview with counts, or results, or the comment id: %s", body)
	}
	if code, body := e.get(t, admin, "/api/v1/sources/web/previews?limit=1"); code != 200 || strings.Count(body, `"number"`) != 1 {
		t.Fatalf("limit=1: %d %s", code, body)
	}

	code, body = e.get(t, admin, "/api/v1/sources/web/previews/7")
	var one wire.Preview
	if code != 200 || json.Unmarshal([]byte(body), &one) != nil {
		t.Fatalf("get: %d %s", code, body)
	}
	if one.Result == nil || len(one.Result.Changes) != 3 || one.HiddenChanges != 0 || one.Result.Changes[1].Plan.Summary != "0 to add, 1 to change" ||
		one.CommentURL == "" || one.HeadSHA != "7777777777777777777777777777777777777777" {
		t.Fatalf("get 7: %s", body)
	}
	if code, body := e.get(t, admin, "/api/v1/sources/web/previews/8"); code != 200 || strings.Contains(body, `"result"`) || strings.Contains(body, `"counts"`) {
		t.Fatalf("get 8 (pending): %d %s", code, body)
	}
	if code, body := e.get(t, admin, "/api/v1/sources/web/previews/9"); code != 200 || !strings.Contains(body, `"file":"web.yaml","line":4`) {
		t.Fatalf("get 9 (invalid): %d %s", code, body)
	}

	for _, c := range []struct {
		who, path string
		code      int
	}{
		{admin, "/api/v1/sources/web/previews/10", 404},
		{admin, "/api/v1/sources/nope/previews", 404},
		{admin, "/api/v1/sources/nope/previews/7", 404},
		{admin, "/api/v1/sources/web/previews/x", 400},
		{admin, "/api/v1/sources/web/previews/0", 400},
		{admin, "/api/v1/sources/web/previews/99999999999", 400},
		{admin, "/api/v1/sources/web/previews?limit=0", 400},
		{"", "/api/v1/sources/web/previews", 401},
		// A source out of scope answers like a missing one.
		{stagingViewer, "/api/v1/sources/prodsrc/previews", 404},
		{stagingViewer, "/api/v1/sources/prodsrc/previews/3", 404},
		{stagingViewer, "/api/v1/sources/idlesrc/previews", 404},
		{"viewer:nowhere", "/api/v1/sources/web/previews", 404},
		{"viewer:nowhere", "/api/v1/sources/web/previews/7", 404},
	} {
		code, body := e.get(t, c.who, c.path)
		if code != c.code {
			t.Errorf("%s %s: %d, want %d: %s", c.who, c.path, code, c.code, body)
		}
		if code == 404 && (strings.Contains(body, "production only") || !strings.Contains(body, "not found")) {
			t.Errorf("%s %s: 404 body %s", c.who, c.path, body)
		}
	}
	_, missing := e.get(t, stagingViewer, "/api/v1/sources/nope/previews")
	if _, outOfScope := e.get(t, stagingViewer, "/api/v1/sources/prodsrc/previews"); strings.ReplaceAll(outOfScope, "prodsrc", "nope") != missing {
		t.Errorf("out of scope %q differs from missing %q", outOfScope, missing)
	}

	// A viewer of staging sees web's previews, with the production changes left out.
	code, body = e.get(t, stagingViewer, "/api/v1/sources/web/previews/7")
	if code != 200 || json.Unmarshal([]byte(body), &one) != nil {
		t.Fatalf("staging viewer: %d %s", code, body)
	}
	if len(one.Result.Changes) != 1 || one.Result.Changes[0].Name != "stg-a" || one.HiddenChanges != 2 || strings.Contains(body, "prd-") {
		t.Fatalf("staging viewer sees %s", body)
	}
	// Warnings naming production's resources are left out too, counted; the revision's stay.
	if len(one.Result.Warnings) != 1 || !strings.HasPrefix(one.Result.Warnings[0], "prune guard") || one.HiddenWarnings != 1 {
		t.Fatalf("staging viewer's warnings %q, hidden %d", one.Result.Warnings, one.HiddenWarnings)
	}
}

func TestPreviewPages(t *testing.T) {
	t.Parallel()
	e := newAuthzEnv(t)
	savePreviews(t, e.st)
	const admin = "admin:*"

	code, body := e.get(t, admin, "/sources/web")
	if code != 200 {
		t.Fatalf("source page: %d", code)
	}
	for _, want := range []string{`id="previews"`, `<a href="https://github.com/acme/web/pull/7" rel="noreferrer">#7</a>`, `href="/sources/web/previews/7"`,
		"Bigger queues &lt;script&gt;", `phase-ready`, `phase-pending`, `phase-failed`, "7777777777", `class="c-add">+1`, "2 invalid", ">#8<"} {
		if !strings.Contains(body, want) {
			t.Errorf("source page lacks %q", want)
		}
	}
	if strings.Contains(body, "javascript:") {
		t.Error("a javascript: pull request URL became a link")
	}

	code, body = e.get(t, admin, "/sources/web/previews/7")
	if code != 200 {
		t.Fatalf("preview page: %d %s", code, body)
	}
	for _, want := range []string{
		`<span class="d-add">&#43;size: 2 # &lt;script&gt;alert(1)&lt;/script&gt;</span>`, `<span class="d-del">-size: 1</span>`, `<span class="d-hunk">`,
		"<details><summary>Plan: 0 to add, 1 to change</summary>", "~ size: 1 -&gt; 2 &lt;img src=x onerror=alert(1)&gt;",
		"prune guard: 1 deletion of 3 resources (33%) would be skipped &lt;b&gt;", `<span class="op op-delete">delete</span>`,
		`href="/resources/staging/Queue/stg-a"`, ">no plan</span>", `href="https://github.com/acme/web/pull/7#issuecomment-1"`,
		`<span class="c-add">1</span> to add`, "1 unchanged",
		`After merge: <span class="cond cond-progress">waits for approval</span> needs 1 approval from group sre (policy prod-needs-review)`,
		`After merge: <span class="cond cond-bad">denied</span> denied by policy no-prod-deletes: production queues stay &lt;b&gt;`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("preview page lacks %q", want)
		}
	}
	// The added resource has no page yet.
	if strings.Contains(body, `href="/resources/production/Queue/prd-new"`) {
		t.Error("an added resource links to a page that does not exist")
	}

	_, body = e.get(t, admin, "/sources/web/previews/9")
	for _, want := range []string{"<code>web.yaml:4</code>", "<code>spec.size</code>", "must be an integer", "no file &lt;here&gt;", "the pull request is invalid"} {
		if !strings.Contains(body, want) {
			t.Errorf("invalid preview page lacks %q", want)
		}
	}
	_, body = e.get(t, admin, "/sources/web/previews/8")
	if !strings.Contains(body, "being prepared") {
		t.Error("pending preview page does not say it is being prepared")
	}

	// A viewer of staging: the production changes are counted, not shown.
	_, body = e.get(t, stagingViewer, "/sources/web/previews/7")
	if !strings.Contains(body, "2 more changes are in namespaces you may not see") || strings.Contains(body, "prd-") {
		t.Errorf("staging viewer's preview page:\n%s", body)
	}

	for _, c := range []struct {
		who, path string
		code      int
	}{
		{admin, "/sources/web/previews/10", 404},
		{admin, "/sources/web/previews/abc", 400},
		{stagingViewer, "/sources/prodsrc/previews/3", 404},
	} {
		if code, _ := e.get(t, c.who, c.path); code != c.code {
			t.Errorf("%s %s: %d, want %d", c.who, c.path, code, c.code)
		}
	}

	// No inline script or style (CSP), nothing unescaped.
	styleRe := regexp.MustCompile(`(?i)<script>|<[a-z][^>]*\s(?:style|on[a-z]+)=`)
	for _, p := range []string{"/sources/web", "/sources/web/previews/7", "/sources/web/previews/9"} {
		_, body := e.get(t, admin, p)
		if m := styleRe.FindString(body); m != "" {
			t.Errorf("%s: inline %q", p, m)
		}
		if strings.Contains(body, "<img") || strings.Contains(body, "<b>") || strings.Contains(body, "ZgotmplZ") {
			t.Errorf("%s: unescaped markup", p)
		}
	}
}

// The preview page labels each gate: a wait, a deny, and one decided on the plan made after
// merge.
func TestPreviewGateLabels(t *testing.T) {
	t.Parallel()
	gates := []*previewresult.Gate{{Decision: "requireApproval", Policy: "a", Requires: []string{"1 approval from group dba (policy a)"}},
		{Decision: "deny", Policy: "b"}, {Decision: previewresult.Undecided, Policy: "c"}}
	res := &previewresult.Result{}
	for i, g := range gates {
		res.Changes = append(res.Changes, previewresult.Change{Op: "change", Kind: "Queue", Namespace: "ns", Name: strconv.Itoa(i), Gate: g})
	}
	d := makePreviewData(store.Source{Name: "web"}, wire.Preview{Result: res})
	want := [][3]string{{"waits for approval", "progress", "needs 1 approval from group dba (policy a)"}, {"denied", "bad", "denied by policy b"},
		{"decided after merge", "progress", "policy c reads the plan, which this preview has not got: decided after merge"}}
	for i, v := range d.Changes {
		if got := [3]string{v.GateLabel, v.GateClass, v.GateText}; got != want[i] {
			t.Errorf("gate %d: %q, want %q", i, got, want[i])
		}
	}
}
