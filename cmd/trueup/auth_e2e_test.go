package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
	"github.com/trueup-dev/trueup/internal/store"
)

var (
	tokenRe     = regexp.MustCompile(`(?m)^    (tu_[A-Za-z0-9_-]{43})$`)
	tokenLineRe = regexp.MustCompile(`(?m)^ +(- \{name: .*\})$`)
)

// createToken runs `trueup token create` and returns the token and the config line.
func createToken(t *testing.T, args ...string) (tok, line string) {
	t.Helper()
	out, _, err := runCLI(t, append([]string{"token", "create"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	m, l := tokenRe.FindStringSubmatch(out), tokenLineRe.FindStringSubmatch(out)
	if m == nil || l == nil {
		t.Fatalf("token create printed:\n%s", out)
	}
	return m[1], l[1]
}

func TestTokenCreateRefusesBadInput(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"a!b":              `--name: "a!b" must be`,
		"ci --role root":   `--role: "root" is not one of viewer, operator, admin`,
		"ci -n Production": `--namespaces[0]: "Production"`,
	} {
		_, _, err := runCLI(t, append([]string{"token", "create"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("token create %s: %v, want %q", args, err, want)
		}
	}
}

// serveProcess starts the test binary as `trueup serve` with the config text and returns
// its combined output and a function that waits for its exit (stopping it first if asked).
func serveProcess(t *testing.T, cfgText string, env ...string) (*syncBuffer, func(stop bool) error) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "trueup.yaml")
	writeTestFile(t, cfgPath, cfgText)
	cmd := exec.Command(os.Args[0], "serve", "--config", cfgPath, "--data-dir", filepath.Join(dir, "data"))
	cmd.Env = append(append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1"), env...)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	wait := func(stop bool) error {
		if stop {
			_ = cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			return errors.New("serve did not exit")
		}
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return &logs, wait
}

// TestServeRefusesOpenListen: a non-loopback listen without auth: exits 1 before touching
// anything, naming the fix.
func TestServeRefusesOpenListen(t *testing.T) {
	t.Parallel()
	logs, wait := serveProcess(t, "server: {listen: \"0.0.0.0:0\"}\ndatabase: {url: \"postgres://nowhere.invalid/x\"}\n")
	err := wait(false)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1\n%s", err, logs.String())
	}
	for _, want := range []string{"no auth: section", "auth: {anonymous: viewer}", "tokens or oidc"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("message does not say %q:\n%s", want, logs.String())
		}
	}
}

// TestServeWithTokens: a non-loopback listen with auth: {anonymous: viewer} and a token
// made by `trueup token create` starts; the CLI reaches it with --token, TRUEUP_TOKEN and a
// context file; a bad token is a 401 although anonymous reading is allowed; a context file
// others can read is refused.
func TestServeWithTokens(t *testing.T) {
	t.Parallel()
	tok, line := createToken(t, "ci-bot", "--role", "operator", "-n", "staging")
	port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	logs, wait := serveProcess(t, fmt.Sprintf("server: {listen: \"0.0.0.0:%s\"}\nauth:\n  anonymous: viewer\n  tokens:\n    %s\n", port, line),
		"TRUEUP_DATABASE_URL="+pgtest.NewDatabase(t, store.MigrateURL))
	defer func() {
		if err := wait(true); err != nil {
			t.Errorf("serve: %v\n%s", err, logs.String())
		}
	}()
	base := "http://127.0.0.1:" + port
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	status := func(token string) int {
		req, _ := http.NewRequest("GET", base+"/api/v1/sources", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b, c := status(tok), status(""), status(tok[:len(tok)-1]); a != 200 || b != 200 || c != 401 {
		t.Errorf("token %d, anonymous %d, bad token %d; want 200, 200, 401", a, b, c)
	}

	// The CLI, as a process (its environment and context file are its own).
	cli := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(append(os.Environ(), "TRUEUP_TEST_RUN_MAIN=1", "TRUEUP_SERVER=", "TRUEUP_TOKEN="), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	home := t.TempDir()
	xdg := "XDG_CONFIG_HOME=" + home
	if out, err := cli([]string{xdg}, "--server", base, "--token", tok+"x", "get", "sources"); err == nil || !strings.Contains(out, "invalid bearer token") {
		t.Errorf("bad --token: %v %s", err, out)
	}
	if out, err := cli([]string{xdg, "TRUEUP_TOKEN=" + tok}, "--server", base, "get", "sources"); err != nil {
		t.Errorf("TRUEUP_TOKEN: %v %s", err, out)
	}
	ctxFile := filepath.Join(home, "trueup", "config.yaml")
	writeTestFile(t, ctxFile, fmt.Sprintf("server: %s\ntoken: %s\n", base, tok+"x"))
	if err := os.Chmod(ctxFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cli([]string{xdg}, "get", "sources"); err == nil || !strings.Contains(out, "invalid bearer token") {
		t.Errorf("context file (server and a bad token) not used: %v %s", err, out)
	}
	writeTestFile(t, ctxFile, fmt.Sprintf("server: %s\ntoken: %s\n", base, tok))
	if out, err := cli([]string{xdg}, "get", "sources"); err != nil {
		t.Errorf("context file: %v %s", err, out)
	}
	if err := os.Chmod(ctxFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cli([]string{xdg}, "get", "sources"); err == nil || !strings.Contains(out, "readable by others") {
		t.Errorf("world-readable context file: %v %s", err, out)
	}
}
