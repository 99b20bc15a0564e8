package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/trueup-dev/trueup/internal/logbuf"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = logbuf.Buffer

// TestSecretsNeverLeak runs `trueup serve` with secrets in ${VAR}s for an HTTP provisioner
// (header and signing secret), an exec action, a webhook and commit statuses, against
// services that echo those secrets back in their failures; then no secret may appear in any
// log line, API or dashboard answer, metric, or database row. Besides ${VAR}s: a literal
// secret-named exec env value, returned as an output by its own command and by another
// plugin, and a host variable the config never names, which an exec command must not see.
func TestSecretsNeverLeak(t *testing.T) {
	secrets := map[string]string{
		"PROV_TOKEN":   "prov-token-9f8e7d6c",
		"SIGN_SECRET":  "sign-secret-1a2b3c4d",
		"EXEC_SECRET":  "exec-secret-4d5e6f7a",
		"HOOK_SECRET":  "hook-secret-7b8c9d0e",
		"STATUS_TOKEN": "ghp_statusToken0123456789",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	// Not from the environment: written in the config as a literal exec env value.
	const literalPassword = "literal-pw-5c6d7e8f"
	secrets["DB_PASSWORD (literal)"] = literalPassword
	// In trueup's environment but named by no config: exec commands must not receive it.
	secrets["HOST_ONLY_TOKEN"] = "host-only-token-2e3f4a5b"
	t.Setenv("HOST_ONLY_TOKEN", secrets["HOST_ONLY_TOKEN"])
	// A provisioner that quotes the request's credentials in its errors.
	var calls sync.Map
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n, _ := calls.LoadOrStore(r.URL.Path, new(int))
		*n.(*int)++
		echo := fmt.Sprintf("rejected: Authorization=%q signature=%q body=%s", r.Header.Get("Authorization"),
			r.Header.Get("X-Trueup-Signature-256"), body)
		switch {
		case strings.HasSuffix(r.URL.Path, "/stalled"):
			http.Error(w, echo, http.StatusUnprocessableEntity)
		case *n.(*int) <= 2:
			http.Error(w, echo, http.StatusInternalServerError)
		default:
			_, _ = fmt.Fprintf(w, `{"outputs": {"note": "created", "echo": "seen %s"}, "message": "ok"}`, literalPassword)
		}
	}))
	defer prov.Close()
	// A GitHub statuses API that rejects the token, quoting it.
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = fmt.Fprintf(w, `{"message": "Bad credentials: %s"}`, r.Header.Get("Authorization"))
	}))
	defer gh.Close()

	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Service}
spec:
  group: svc.example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: hook, with: {path: /services}}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Broken}
spec:
  group: svc.example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: hook, with: {path: /stalled}}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Script}
spec:
  group: svc.example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: leaky}
---
apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Echo}
spec:
  group: svc.example.com
  versions: [{name: v1, schema: {type: object}}]
  action: {name: echo}
`)
	writeTestFile(t, filepath.Join(repo, "resources.yaml"), `apiVersion: svc.example.com/v1
kind: Service
metadata: {name: api}
spec: {tier: gold}
---
apiVersion: svc.example.com/v1
kind: Broken
metadata: {name: bad}
spec: {}
---
apiVersion: svc.example.com/v1
kind: Script
metadata: {name: job}
spec: {}
---
apiVersion: svc.example.com/v1
kind: Echo
metadata: {name: out}
spec: {}
`)
	script := filepath.Join(dir, "leaky.sh")
	writeTestFile(t, script, "#!/bin/sh\ncat >/dev/null\necho \"cannot log in with $EXEC_SECRET\" >&2\nexit 1\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	echo := filepath.Join(dir, "echo.sh")
	writeTestFile(t, echo, "#!/bin/sh\ncat >/dev/null\n"+
		`printf '{"outputs": {"password": "%s", "host": "%s"}, "message": "connected with %s"}' "$DB_PASSWORD" "${HOST_ONLY_TOKEN:-none}" "$DB_PASSWORD"`+"\n")
	if err := os.Chmod(echo, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`dataDir: %s
server: {listen: "%s"}
log: {level: debug}
sources:
  - name: local
    dir: {path: %s}
    webhook: {secret: "${HOOK_SECRET}"}
    commitStatus: {provider: github, token: "${STATUS_TOKEN}", baseURL: "%s/", repo: acme/infra}
actions:
  - name: hook
    type: http
    config:
      url: %s
      headers: {Authorization: "Bearer ${PROV_TOKEN}"}
      signingSecret: "${SIGN_SECRET}"
      retry: {attempts: 1, initial: 10ms}
  - name: leaky
    type: exec
    config: {command: ["%s"], env: {EXEC_SECRET: "${EXEC_SECRET}"}}
  - name: echo
    type: exec
    config: {command: ["%s"], env: {DB_PASSWORD: "%s"}}
reconcile: {workers: 4, backoff: {initial: 100ms, max: 500ms}}
`, filepath.Join(dir, "data"), addr, repo, gh.URL, prov.URL, script, echo, literalPassword))

	url := pgtest.NewDatabase(t, store.MigrateURL)
	t.Setenv("TRUEUP_DATABASE_URL", url)
	var logs syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetOut(&logs)
		root.SetErr(&logs)
		root.SetArgs([]string{"serve", "--config", cfgPath})
		done <- root.ExecuteContext(ctx)
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}()

	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Wait for: the service Ready after two failures, the broken one Stalled, the script
	// failing repeatedly.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var ready, stalled, scriptFails, echoReady int
		_ = conn.QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE kind = 'Service' AND phase = 'Ready'),
			count(*) FILTER (WHERE kind = 'Echo' AND phase = 'Ready'),
			count(*) FILTER (WHERE kind = 'Broken' AND conditions @> '[{"type":"Stalled","status":"True"}]'),
			(SELECT count(*) FROM reconcile_history WHERE kind = 'Script' AND result = 'Failed')
			FROM resources`).Scan(&ready, &echoReady, &stalled, &scriptFails)
		if ready == 1 && echoReady == 1 && stalled == 1 && scriptFails >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: ready %d echo ready %d stalled %d script failures %d\n%s", ready, echoReady, stalled, scriptFails, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A bad webhook (wrong secret) and a good one, to exercise that path too.
	for _, auth := range []string{"Bearer wrong", "Bearer " + secrets["HOOK_SECRET"]} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/local", strings.NewReader(`{}`))
		req.Header.Set("Authorization", auth)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}

	var seen strings.Builder
	for _, p := range []string{"/api/v1/resources", "/api/v1/sources", "/api/v1/sources/local", "/api/v1/events",
		"/api/v1/resourcetypes", "/api/v1/replicas", "/metrics", "/", "/resources", "/sources", "/sources/local",
		"/api/v1/resources/default/Service/api", "/api/v1/resources/default/Service/api/history",
		"/api/v1/resources/default/Broken/bad", "/api/v1/resources/default/Broken/bad/history",
		"/api/v1/resources/default/Script/job", "/api/v1/resources/default/Script/job/history",
		"/api/v1/resources/default/Script/job/events", "/resources/default/Script/job", "/resources/default/Broken/bad",
		"/api/v1/resources/default/Echo/out", "/api/v1/resources/default/Echo/out/history", "/resources/default/Echo/out"} {
		resp, err := http.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&seen, "== %s (%d)\n%s\n", p, resp.StatusCode, b)
	}
	// Every row of every table, as text.
	for _, table := range []string{"resources", "reconcile_history", "events", "sources", "resource_types", "changes", "replicas", "webhook_deliveries"} {
		rows, err := conn.Query(context.Background(), "SELECT t::text FROM "+table+" t")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			fmt.Fprintf(&seen, "%s: %s\n", table, s)
		}
		rows.Close()
	}
	// The failures really quoted something: the provisioner's and the script's messages arrived.
	all := seen.String() + logs.String()
	all = strings.ReplaceAll(all, `": "`, `":"`)
	for _, want := range []string{"rejected: Authorization=", "cannot log in with", `"password":"***"`, `"echo":"seen ***"`,
		`"host":"none"`, "connected with ***"} {
		if !strings.Contains(all, want) {
			t.Errorf("expected failure text %q is missing: the test would prove nothing", want)
		}
	}
	for name, secret := range secrets {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("%s appears in the logs", name)
		}
		if i := strings.Index(seen.String(), secret); i >= 0 {
			t.Errorf("%s appears in API, dashboard or database output: …%s…", name, seen.String()[max(0, i-200):min(len(seen.String()), i+50)])
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
