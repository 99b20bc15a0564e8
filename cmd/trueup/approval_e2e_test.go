package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trueup-dev/trueup/internal/manifest/manifesttest"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/wire"
)

// gate is a running trueup serve of the approval tests: a Git source infra whose commits are
// authored by ada (ada@example.com), three tokens (dba and ada are named by approvals.from,
// ci, an operator, is not: the approval right comes from the policy, not the role) and a
// webhook receiver of every notification.
type gate struct {
	t               *testing.T
	dir, repo, addr string
	dba, ada, ci    string // the tokens
	conn            *pgx.Conn
	logs            *syncBuffer
	hook            *hookReceiver
	commit          func(msg string, files map[string]string) // writes files under manifests/ and commits them as ada
	remove          func(msg, file string)                    // removes a file of manifests/ in a commit by ada
}

// startGate commits files (paths under manifests/) as ada and runs trueup serve with the
// actions block actions and the top-level blocks policies (policies, windows), on a fresh
// database.
func startGate(t *testing.T, files map[string]string, actions, policies string) *gate {
	t.Helper()
	g := &gate{t: t, dir: t.TempDir(), hook: newHookReceiver(t)}
	g.repo = filepath.Join(g.dir, "repo")
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", g.repo, "-c", "user.name=ada", "-c", "user.email=ada@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	g.commit = func(msg string, files map[string]string) {
		t.Helper()
		for p, data := range files {
			writeTestFile(t, filepath.Join(g.repo, "manifests", p), data)
		}
		git("add", "-A")
		git("commit", "-q", "-m", msg)
	}
	g.remove = func(msg, file string) {
		t.Helper()
		git("rm", "-q", filepath.Join("manifests", file))
		git("commit", "-q", "-m", msg)
	}
	if err := os.MkdirAll(g.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	g.commit("first", files)
	var dbaLine, adaLine, ciLine string
	g.dba, dbaLine = createToken(t, "dba", "--role", "viewer")
	g.ada, adaLine = createToken(t, "ada", "--role", "viewer")
	g.ci, ciLine = createToken(t, "ci", "--role", "operator")
	g.addr = freeAddr(t)
	cfgPath := filepath.Join(g.dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: "%s"}
dataDir: %s
auth:
  tokens:
    %s
    %s
    %s
sources:
  - name: infra
    git: {url: %s, path: manifests, interval: 1s}
    prune: {maxFraction: 1}
%s
reconcile: {workers: 2, backoff: {initial: 100ms, max: 500ms}}
notifications:
  providers:
    - {name: hook, type: webhook, url: "%s"}
  rules:
    - {name: gate, providers: [hook], events: [ApprovalRequired, Approved, Rejected, PolicyDenied, Drifted]}
  groupWindow: -1s
  rateLimit: -1s
%s`, g.addr, filepath.Join(g.dir, "data"), dbaLine, adaLine, ciLine, g.repo, actions, g.hook.srv.URL, policies))
	g.logs, g.conn = serveDB(t, cfgPath)
	return g
}

// eventually polls done until it holds, failing the test after 90 seconds with what done
// last said.
func (g *gate) eventually(what string, done func() (bool, string)) {
	g.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		ok, last := done()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("%s: not within 90s; last: %s\n%s", what, last, g.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// api sends a request with the token and returns the status and the body (0 and the error
// when it got no answer: the server may still be starting).
func (g *gate) api(method, path, token string, body any) (int, []byte) {
	g.t.Helper()
	var r io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, "http://"+g.addr+path, r)
	if err != nil {
		g.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// cli runs the CLI as a process against the server with the token.
func (g *gate) cli(token string, args ...string) (string, error) {
	g.t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--server", "http://" + g.addr, "--token", token}, args...)...)
	cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_SERVER=", "TRUEUP_TOKEN=", "XDG_CONFIG_HOME="+g.dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// gated is a resource as GET of one resource answers it (with the approval it waits for).
type gated struct {
	wire.Resource
	err string // why it could not be read
}

// resource reads NS/KIND/NAME through the API as dba (with err set when it could not).
func (g *gate) resource(ref string) gated {
	g.t.Helper()
	code, body := g.api("GET", "/api/v1/resources/"+ref, g.dba, nil)
	var r gated
	if err := json.Unmarshal(body, &r); code != 200 || err != nil {
		return gated{err: fmt.Sprintf("GET %s: %d %v %s", ref, code, err, body)}
	}
	return r
}

// condition is the condition typ of r (empty when absent).
func (r gated) condition(typ string) (state, reason, message string) {
	c, _ := status.Get(r.Status.Conditions, typ)
	return c.Status, c.Reason, c.Message
}

// waiting reports whether r waits for approvals (Pending, Approved=False ApprovalRequired,
// a pending approval), and what it is.
func (r gated) waiting() (bool, string) {
	st, reason, msg := r.condition("Approved")
	ok := r.Status.Phase == "Pending" && st == "False" && reason == "ApprovalRequired" && r.Approval != nil && r.Approval.State == "pending"
	return ok, fmt.Sprintf("phase %s, Approved=%s %s %q, approval %+v%s", r.Status.Phase, st, reason, msg, r.Approval, r.err)
}

// ready reports whether r is Ready.
func (r gated) ready() (bool, string) {
	return r.Status.Phase == "Ready", fmt.Sprintf("phase %s: %s (approval %+v)%s", r.Status.Phase, r.Status.Message, r.Approval, r.err)
}

// vote posts an approve or reject of ref by the token and returns the status and the body.
func (g *gate) vote(verb, ref, token, reason, planHash string) (int, string) {
	g.t.Helper()
	code, body := g.api("POST", "/api/v1/resources/"+ref+"/"+verb, token, wire.Vote{Reason: reason, PlanHash: planHash})
	return code, string(body)
}

// hookReceiver is a webhook notification receiver on loopback: it records every payload.
type hookReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []hookEvent
}

type hookEvent struct {
	Event    string `json:"event"`
	Title    string `json:"title"`
	Message  string `json:"message"`
	Text     string `json:"text"`
	Resource struct {
		Namespace, Kind, Name string
	} `json:"resource"`
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e hookEvent
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &e); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, e)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// events are the events received for the resource name, with their messages and texts.
func (h *hookReceiver) events(name string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.got {
		if e.Resource.Name == name {
			out = append(out, e.Event+": "+e.Message+"\n"+e.Text)
		}
	}
	return out
}

// received reports whether an event of the resource name whose text holds each of want
// arrived, and what arrived.
func (h *hookReceiver) received(name, event string, want ...string) (bool, string) {
	got := h.events(name)
	for _, e := range got {
		if !strings.HasPrefix(e, event+": ") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(e, w)
		}
		if ok {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%q", got)
}

const gateModule = `variable "size" { type = number }
variable "engine" { type = string }
resource "terraform_data" "db" {
  input            = var.size
  triggers_replace = var.engine
}
output "size" { value = terraform_data.db.output }
`

func gateDB(name, labels string, size int, engine string) string {
	return fmt.Sprintf("apiVersion: db.example.com/v1\nkind: Database\nmetadata: {name: %s, namespace: production, labels: {%s}}\nspec: {size: %d, engine: %s}\n",
		name, labels, size, engine)
}

// tfAttrs reads the attributes of terraform_data.db in the state of production/Database/name
// (nil without a state row, or with an empty state).
func tfAttrs(t *testing.T, conn *pgx.Conn, name string) map[string]any {
	t.Helper()
	var data string
	err := conn.QueryRow(context.Background(), `SELECT data FROM trueup_tf_tf.states WHERE name = $1`, "production.Database."+name).Scan(&data)
	if err == pgx.ErrNoRows {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Resources []struct {
			Instances []struct {
				Attributes map[string]any `json:"attributes"`
			} `json:"instances"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(data), &state); err != nil || len(state.Resources) > 1 || len(state.Resources) == 1 && len(state.Resources[0].Instances) != 1 {
		t.Fatalf("state of %s: %v\n%s", name, err, data)
	}
	if len(state.Resources) == 0 {
		return nil // destroyed; the workspace's row goes next
	}
	return state.Resources[0].Instances[0].Attributes
}

// attrValue is the value of a terraform_data attribute ("input", "triggers_replace": a
// dynamic value {"value": …, "type": …}; "id": a string), printed.
func attrValue(attrs map[string]any, key string) string {
	v := attrs[key]
	if m, ok := v.(map[string]any); ok {
		v = m["value"]
	}
	return fmt.Sprint(v)
}

// resizeByHand changes the state of production/Database/name as someone working outside trueup
// would (the database's size set to size by hand): the next plan differs from the last one.
func resizeByHand(t *testing.T, conn *pgx.Conn, name string, size int) {
	t.Helper()
	ctx := context.Background()
	var data string
	key := "production.Database." + name
	if err := conn.QueryRow(ctx, `SELECT data FROM trueup_tf_tf.states WHERE name = $1`, key).Scan(&data); err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal([]byte(data), &state); err != nil {
		t.Fatal(err)
	}
	state["serial"] = state["serial"].(float64) + 1
	attrs := state["resources"].([]any)[0].(map[string]any)["instances"].([]any)[0].(map[string]any)["attributes"].(map[string]any)
	for _, k := range []string{"input", "output"} {
		if m, ok := attrs[k].(map[string]any); ok {
			m["value"] = size
		}
	}
	out, _ := json.Marshal(state)
	if _, err := conn.Exec(ctx, `UPDATE trueup_tf_tf.states SET data = $2 WHERE name = $1`, key, string(out)); err != nil {
		t.Fatal(err)
	}
}

// TestApprovalTerraformEndToEnd is the acceptance of governed apply with the real binary, the
// real terraform (terraform_data only) and three tokens:
//   - a change whose plan only updates a critical production database is applied at once;
//   - a deny policy Stalls its resource with its message (its action never called);
//   - a change that replaces the database waits, Pending with Approved=False
//     ApprovalRequired, the plan shown by the API and the CLI (approvals, describe), its state
//     untouched, and an ApprovalRequired notification arrives;
//   - ci, outside approvals.from, is refused (403), and so is ada, named but the commit's
//     author (notAuthor);
//   - the world moves (the database resized by hand) after the request: dba's approval, given
//     for the plan shown, lapses: a new request with another plan hash, nothing applied;
//   - dba approves the new plan (the CLI): exactly it is applied (the state shows the
//     replacement), Approved=True, history names dba, the policy and the plan's hash, and the
//     Approved notification arrives;
//   - the manifest removed, the delete waits with terraform's destroy plan until dba approves
//     it, then the database is destroyed.
func TestApprovalTerraformEndToEnd(t *testing.T) {
	t.Parallel()
	tf := terraformOnPath(t)
	dir := t.TempDir()
	offlineTerraformRC(t, dir)
	g := startGate(t, map[string]string{
		"modules/db/main.tf": gateModule,
		"types.yaml": manifesttest.TypeDoc("Database", "db.example.com",
			"{type: object, required: [size, engine], properties: {size: {type: integer}, engine: {type: string}}}", "tf"),
		"orders.yaml": gateDB("orders", "tier: critical", 3, "pg15"),
		"legacy.yaml": gateDB("legacy", "frozen: \"true\"", 1, "pg12"),
	}, fmt.Sprintf(`actions:
  - name: tf
    type: terraform
    config: {module: {source: infra, path: manifests/modules/db}, binary: %s, workDir: %s, env: {TF_CLI_CONFIG_FILE: %s}}`,
		tf, filepath.Join(dir, "work"), filepath.Join(dir, "terraformrc")), `policies:
  - name: production-frozen
    match: {namespaces: [production], selector: "frozen=true"}
    action: deny
    message: "legacy databases are frozen until the migration"
  - name: prod-destroy-needs-dba
    match: {sources: [infra], namespaces: [production], kinds: [Database], selector: "tier=critical"}
    when: "plan.destroy > 0 || plan.replace > 0 || change.type == 'delete'"
    action: requireApproval
    approvals: {count: 1, from: [{group: dba}, {token: dba}, {token: ada}], notAuthor: true}
    message: "replacing or deleting a critical production database needs a DBA"
`)
	const orders, legacy = "production/Database/orders", "production/Database/legacy"

	// Created: the plan only adds, so the policy does not hold.
	g.eventually("orders Ready", func() (bool, string) { return g.resource(orders).ready() })
	if st, reason, _ := g.resource(orders).condition("Approved"); st != "True" || reason != "PolicyAllowed" {
		t.Errorf("orders created: Approved=%s %s, want True PolicyAllowed", st, reason)
	}
	// Denied: Stalled with the policy's message, terraform never ran for it.
	g.eventually("legacy Stalled by the deny policy", func() (bool, string) {
		r := g.resource(legacy)
		st, reason, msg := r.condition("Approved")
		stalled, _, _ := r.condition("Stalled")
		return st == "False" && reason == "PolicyDenied" && stalled == "True" && strings.Contains(msg, "legacy databases are frozen until the migration"),
			fmt.Sprintf("phase %s, Approved=%s %s %q, Stalled=%s", r.Status.Phase, st, reason, msg, stalled)
	})
	if attrs := tfAttrs(t, g.conn, "legacy"); attrs != nil {
		t.Errorf("a denied resource was applied: %v", attrs)
	}
	g.eventually("the PolicyDenied notification", func() (bool, string) {
		return g.hook.received("legacy", "PolicyDenied", "legacy databases are frozen")
	})

	// An update in place is applied at once.
	g.commit("resize orders", map[string]string{"orders.yaml": gateDB("orders", "tier: critical", 4, "pg15")})
	g.eventually("orders resized", func() (bool, string) {
		a := tfAttrs(t, g.conn, "orders")
		return attrValue(a, "input") == "4", fmt.Sprint(a)
	})
	g.eventually("orders Ready at generation 2", func() (bool, string) {
		r := g.resource(orders)
		ok, s := r.ready()
		return ok && r.Metadata.Generation == 2, s
	})
	before := tfAttrs(t, g.conn, "orders")

	// A replacement waits, with its plan.
	g.commit("orders on pg16", map[string]string{"orders.yaml": gateDB("orders", "tier: critical", 4, "pg16")})
	g.eventually("orders waiting for approval", func() (bool, string) { return g.resource(orders).waiting() })
	r := g.resource(orders)
	a := r.Approval
	if a.Policy != "prod-destroy-needs-dba" || a.Decision != "requireApproval" || a.Generation != 3 || a.ChangeType != "update" ||
		!a.Plan.Available || a.Plan.Replace != 1 || a.Plan.Destroy != 0 || !strings.Contains(a.Plan.Text, "terraform_data.db") ||
		a.Author.Email != "ada@example.com" || len(a.PlanHash) < 12 {
		t.Errorf("the approval request: %+v", a)
	}
	_, _, msg := r.condition("Approved")
	for _, want := range []string{"replacing or deleting a critical production database needs a DBA", a.PlanHash[:12], "not by the commit's author"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Approved condition message %q lacks %q", msg, want)
		}
	}
	if st, reason, _ := r.condition("Reconciling"); st != "True" || reason != "ApprovalRequired" {
		t.Errorf("Reconciling=%s %s while waiting, want True ApprovalRequired", st, reason)
	}
	firstHash := a.PlanHash
	g.eventually("the ApprovalRequired notification", func() (bool, string) {
		return g.hook.received("orders", "ApprovalRequired", firstHash[:12])
	})
	code, body := g.api("GET", "/api/v1/approvals?namespace=production&state=pending", g.ci, nil)
	var list struct{ Items []wire.Approval }
	if err := json.Unmarshal(body, &list); code != 200 || err != nil || len(list.Items) != 1 || list.Items[0].Name != "orders" || list.Items[0].PlanHash != firstHash {
		t.Errorf("GET /api/v1/approvals: %d %v %s", code, err, body)
	}
	if out, err := g.cli(g.dba, "approvals", "-n", "production"); err != nil || !strings.Contains(out, "orders") || !strings.Contains(out, "prod-destroy-needs-dba") {
		t.Errorf("trueup approvals: %v\n%s", err, out)
	}
	if out, err := g.cli(g.dba, "describe", "Database/orders", "-n", "production"); err != nil || !strings.Contains(out, "terraform_data.db") ||
		!strings.Contains(out, firstHash[:12]) {
		t.Errorf("trueup describe shows no plan or hash: %v\n%s", err, out)
	}
	if after := tfAttrs(t, g.conn, "orders"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the waiting replacement was applied:\nbefore %v\nafter  %v", before, after)
	}

	// Refused: a token outside approvals.from, and the commit's author.
	if code, body := g.vote("approve", orders, g.ci, "ship it", firstHash); code != 403 || !strings.Contains(body, "may not approve") {
		t.Errorf("approval by ci: %d %s, want 403 may not approve", code, body)
	}
	if code, body := g.vote("approve", orders, g.ada, "mine is fine", firstHash); code != 403 || !strings.Contains(body, "commit's author") {
		t.Errorf("approval by the author: %d %s, want 403 commit's author", code, body)
	}
	if out, err := g.cli(g.ada, "approve", orders, "--reason", "mine is fine"); err == nil || !strings.Contains(out, "commit's author") {
		t.Errorf("trueup approve by the author: %v %s", err, out)
	}
	if code, body := g.vote("approve", orders, g.dba, "", "0000000000000000"); code != 409 {
		t.Errorf("approval of another plan: %d %s, want 409", code, body)
	}

	// The world moves after the request; the approval given for the plan shown lapses.
	resizeByHand(t, g.conn, "orders", 7)
	if code, body := g.vote("approve", orders, g.dba, "checked the replacement", firstHash); code != 200 {
		t.Fatalf("approval by dba: %d %s", code, body)
	}
	var secondHash string
	g.eventually("a new request for the moved world", func() (bool, string) {
		r := g.resource(orders)
		ok, s := r.waiting()
		if ok {
			secondHash = r.Approval.PlanHash
		}
		return ok && secondHash != firstHash && len(r.Approval.Approvals) == 0, s
	})
	if a := tfAttrs(t, g.conn, "orders"); attrValue(a, "triggers_replace") != "pg15" || attrValue(a, "id") != attrValue(before, "id") || attrValue(a, "input") != "7" {
		t.Errorf("the lapsed approval was applied: %v", a)
	}
	g.eventually("the ApprovalRequired notification of the new plan", func() (bool, string) {
		return g.hook.received("orders", "ApprovalRequired", secondHash[:12])
	})

	// dba approves the new plan: exactly it is applied.
	if out, err := g.cli(g.dba, "approve", orders, "--reason", "the hand resize is known"); err != nil {
		t.Fatalf("trueup approve by dba: %v\n%s", err, out)
	}
	g.eventually("orders replaced", func() (bool, string) {
		r := g.resource(orders)
		ok, s := r.ready()
		return ok && r.Metadata.Generation == 3, s
	})
	after := tfAttrs(t, g.conn, "orders")
	if attrValue(after, "triggers_replace") != "pg16" || attrValue(after, "input") != "4" || attrValue(after, "id") == attrValue(before, "id") {
		t.Errorf("the state after the approval shows no replacement:\nbefore %v\nafter  %v", before, after)
	}
	r = g.resource(orders)
	if st, reason, msg := r.condition("Approved"); st != "True" || reason != "Approved" || !strings.Contains(msg, "dba") || !strings.Contains(msg, secondHash[:12]) {
		t.Errorf("Approved=%s %s %q, want True Approved naming dba and plan %s", st, reason, msg, secondHash[:12])
	}
	if r.Approval != nil {
		t.Errorf("an approval request stays after the apply: %+v", r.Approval)
	}
	var result, hmsg string
	if err := g.conn.QueryRow(context.Background(), `SELECT result, message FROM reconcile_history WHERE name = 'orders' AND generation = 3
		ORDER BY id DESC LIMIT 1`).Scan(&result, &hmsg); err != nil {
		t.Fatal(err)
	}
	if result != "Succeeded" || !strings.Contains(hmsg, "dba") || !strings.Contains(hmsg, secondHash[:12]) || !strings.Contains(hmsg, "prod-destroy-needs-dba") {
		t.Errorf("history of the apply: %s %q, want Succeeded naming dba, the policy and plan %s", result, hmsg, secondHash[:12])
	}
	var given int
	if err := g.conn.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE name = 'orders' AND reason = 'ApprovalGiven'
		AND message LIKE '%token:dba%'`).Scan(&given); err != nil || given != 2 {
		t.Errorf("ApprovalGiven events by token:dba: %d %v, want 2", given, err)
	}
	g.eventually("the Approved notification", func() (bool, string) {
		return g.hook.received("orders", "Approved")
	})

	// Removed from Git: the delete waits with terraform's destroy plan, then dba approves it.
	g.remove("remove orders", "orders.yaml")
	g.eventually("the delete waiting for approval", func() (bool, string) {
		r := g.resource(orders)
		a := r.Approval
		ok := a != nil && a.State == "pending" && a.Deleting && a.ChangeType == "delete" && a.Plan.Destroy == 1
		return ok, fmt.Sprintf("phase %s, approval %+v%s", r.Status.Phase, a, r.err)
	})
	if a := tfAttrs(t, g.conn, "orders"); attrValue(a, "triggers_replace") != "pg16" {
		t.Errorf("the waiting delete was applied: %v", a)
	}
	if out, err := g.cli(g.dba, "approve", orders, "--reason", "orders moved to the new cluster"); err != nil {
		t.Fatalf("trueup approve of the delete: %v\n%s", err, out)
	}
	g.eventually("orders destroyed", func() (bool, string) {
		var resources int
		_ = g.conn.QueryRow(context.Background(), `SELECT count(*) FROM resources WHERE name = 'orders'`).Scan(&resources)
		a := tfAttrs(t, g.conn, "orders")
		return resources == 0 && a == nil, fmt.Sprintf("%d resource rows, state %v", resources, a)
	})
}
