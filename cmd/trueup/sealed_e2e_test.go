package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed"
	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/sealed/sealedtest"
	"github.com/trueup-dev/trueup/internal/secrets/vaulttest"
	"github.com/trueup-dev/trueup/internal/store"
)

// TestSealedAndReferencedSecretsEndToEnd runs trueup serve as a process with an
// age-encrypted manifest and secretRefs to a fake Vault: the exec action receives the
// plaintexts, which then appear nowhere else — logs, API, history, events, the watch stream,
// dashboard pages, nor a pg_dump of the database; an output that is a number equal to a
// revealed secret is stored as "***". A secretRef to a secret the source is not given is a
// clear error on its resource.
func TestSealedAndReferencedSecretsEndToEnd(t *testing.T) {
	const (
		sopsPassword = "sops-Passw0rd-71c2"
		sopsToken    = "sops-token-55e9aa"
		sopsPin      = "90817263" // a string secret that an action returns as a number
		vaultValue   = "vault-Value-3b8d41"
		vaultToken   = "hvs.test-token-0f1e2d"
		hidden       = "hidden-Value-9a0b1c" // in Vault, but not exposed to the source
	)
	vault := vaulttest.New(t)
	vault.AddToken(vaultToken, time.Time{})
	vault.Put("secret", "trueup/db-main", map[string]any{"password": vaultValue})
	vault.Put("secret", "trueup/payroll", map[string]any{"password": hidden})

	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeTestFile(t, filepath.Join(repo, "types.yaml"), `apiVersion: trueup.dev/v1
kind: ResourceType
metadata: {name: Database}
spec:
  group: db.example.com
  versions:
    - name: v1
      schema:
        type: object
        required: [password]
        properties:
          password: {type: string, minLength: 8}
          port: {type: integer}
          token: {type: string}
          pin: {type: string}
          vaultPassword: {type: string}
  action: {name: show}
`)
	identity, recipient := sealedtest.Key()
	plain := `apiVersion: db.example.com/v1
kind: Database
metadata: {name: orders, namespace: prod}
spec:
  password: ` + sopsPassword + `
  port: 5432
  token: ` + sopsToken + `
  pin: "` + sopsPin + `"
`
	enc, err := sealedtest.Encrypt("db.yaml", []byte(plain), "^spec$", recipient)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(repo, "db.yaml"), string(enc))
	writeTestFile(t, filepath.Join(repo, "refs.yaml"), `apiVersion: db.example.com/v1
kind: Database
metadata: {name: refs, namespace: prod}
spec:
  password: {secretRef: {name: db-main, key: password}}
---
apiVersion: db.example.com/v1
kind: Database
metadata: {name: sneaky, namespace: prod}
spec:
  password: {secretRef: {name: payroll, key: password}}
`)
	keyFile := filepath.Join(dir, "age.key")
	if err := os.WriteFile(keyFile, []byte("# test key\n"+identity+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	received := filepath.Join(dir, "received")
	script := filepath.Join(dir, "show.sh")
	writeTestFile(t, script, `#!/bin/sh
req="$(cat)"
mkdir -p "`+received+`"
printf '%s' "$req" > "`+received+`/$TRUEUP_NAME.json"
pw=$(printf '%s' "$req" | sed -n 's/.*"password":"\([^"]*\)".*/\1/p')
pin=$(printf '%s' "$req" | sed -n 's/.*"pin":"\([0-9]*\)".*/\1/p')
printf '{"done": true, "outputs": {"seen": "%s", "length": %d, "pin": %s}, "message": "connected with %s"}\n' "$pw" "${#pw}" "${pin:-0}" "$pw"
`)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, fmt.Sprintf(`server: {listen: "%s"}
log: {level: debug}
sources:
  - name: local
    dir: {path: %s}
    decryption: {age: {keyFile: age.key}}
actions:
  - name: show
    type: exec
    config: {command: ["%s"]}
secrets:
  stores:
    - name: vault
      type: vault
      vault: {address: "%s", mount: secret, pathPrefix: trueup/, token: "${VAULT_TOKEN}"}
  expose:
    - {store: vault, names: [db-*], sources: [local], namespaces: [prod]}
reconcile: {workers: 2, backoff: {initial: 100ms, max: 500ms}}
`, addr, repo, script, vault.URL))

	dbURL := pgtest.NewDatabase(t, store.MigrateURL)
	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_DATABASE_URL="+dbURL, "VAULT_TOKEN="+vaultToken)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve exited: %v\n%s", err, logs.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("serve did not stop")
		}
	}
	defer stop()

	conn := connect(t, dbURL)
	deadline := time.Now().Add(60 * time.Second)
	var watch strings.Builder
	var watchMu sync.Mutex
	watchStarted := false
	for {
		if !watchStarted {
			if resp, err := http.Get("http://" + addr + "/api/v1/watch?since=0"); err == nil {
				watchStarted = true
				go func() {
					defer resp.Body.Close()
					sc := bufio.NewScanner(resp.Body)
					for sc.Scan() {
						watchMu.Lock()
						watch.WriteString(sc.Text() + "\n")
						watchMu.Unlock()
					}
				}()
			}
		}
		var ready, stalled int
		_ = conn.QueryRow(context.Background(), `SELECT
			count(*) FILTER (WHERE phase = 'Ready'),
			count(*) FILTER (WHERE name = 'sneaky' AND conditions @> '[{"type":"Stalled","status":"True"}]')
			FROM resources`).Scan(&ready, &stalled)
		if ready == 2 && stalled == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: ready %d stalled %d\n%s", ready, stalled, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The stream replays the feed from its start (since=0): it catches up whenever it connected.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		watchMu.Lock()
		caught := strings.Contains(watch.String(), "sneaky")
		watchMu.Unlock()
		if caught {
			break
		}
	}

	// The action got the plaintexts.
	for name, want := range map[string][]string{"orders": {sopsPassword, sopsToken, `"port":5432`, sopsPin}, "refs": {vaultValue}} {
		b, err := os.ReadFile(filepath.Join(received, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: the action did not receive %q: %s", name, w, b)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(received, "sneaky.json")); err == nil {
		t.Error("the action was called with a secret not exposed to the source")
	}

	var seen strings.Builder
	for _, p := range []string{"/api/v1/resources", "/api/v1/sources/local", "/api/v1/events",
		"/api/v1/resources/prod/Database/orders", "/api/v1/resources/prod/Database/orders/history",
		"/api/v1/resources/prod/Database/orders/events", "/api/v1/resources/prod/Database/refs",
		"/api/v1/resources/prod/Database/refs/history", "/api/v1/resources/prod/Database/sneaky",
		"/resources/prod/Database/orders", "/resources/prod/Database/refs", "/resources/prod/Database/sneaky",
		"/resources", "/sources/local", "/", "/metrics"} {
		resp, err := http.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&seen, "== %s (%d)\n%s\n", p, resp.StatusCode, b)
	}
	bin, err := pgembed.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	dump, err := exec.Command(filepath.Join(bin, "pg_dump"), "--dbname="+dbURL, "--data-only").CombinedOutput()
	if err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, dump)
	}
	stop()
	watchMu.Lock()
	if !strings.Contains(watch.String(), "orders") {
		t.Errorf("the watch stream saw nothing of the resources:\n%s", watch.String())
	}
	all := seen.String() + "\n== pg_dump\n" + string(dump) + "\n== watch\n" + watch.String() + "\n== logs\n" + logs.String()
	watchMu.Unlock()

	// The run really carried the values through: markers stored, the output echoed (as ***),
	// the stalled resource's reason named.
	for _, want := range []string{`"password":"*** sops:`, `"token":"*** sops:`, `"seen":"***"`, "connected with ***",
		`"length":18`, `"pin":"***"`, `secret \"payroll\" is not exposed to source \"local\"`, "ENC[AES256_GCM"} {
		if !strings.Contains(strings.ReplaceAll(all, `": "`, `":"`), want) {
			t.Errorf("expected %q in the output: the test would prove nothing", want)
		}
	}
	for name, secret := range map[string]string{"sops password": sopsPassword, "sops token": sopsToken, "sops pin": sopsPin,
		"vault value": vaultValue, "unexposed vault value": hidden, "vault token": vaultToken, "age identity": identity} {
		if i := strings.Index(all, secret); i >= 0 {
			t.Errorf("%s leaked: …%s…", name, all[max(0, i-300):min(len(all), i+60)])
		}
	}
}
