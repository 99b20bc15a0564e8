package ghactions

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/actions/actiontest"
)

var (
	testKeyOnce sync.Once
	testKey     *rsa.PrivateKey
)

// appKey returns a test App key (generated once: RSA generation is slow under -race).
func appKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	testKeyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		testKey = k
	})
	return testKey
}

// withApp sets the fake up as a GitHub App installation and returns the config (with the
// key written to dir as GitHub hands it out, PKCS#1 PEM) and the PEM text.
func withApp(t *testing.T, f *fakeGitHub, dir string, pkcs8 bool) (json.RawMessage, string) {
	t.Helper()
	key := appKey(t)
	f.app = &fakeApp{appID: 4242, installationID: 777, key: &key.PublicKey, ttl: time.Hour}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	if pkcs8 {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	pemText := string(pem.EncodeToMemory(block))
	if err := os.WriteFile(filepath.Join(dir, "app.pem"), []byte(pemText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := f.config(map[string]any{"token": nil, "app": map[string]any{
		"appID": 4242, "installationID": 777, "privateKeyFile": "app.pem"}})
	return cfg, pemText
}

func TestGitHubAppAuth(t *testing.T) {
	t.Parallel()
	for _, pkcs8 := range []bool{false, true} {
		name := "pkcs1"
		if pkcs8 {
			name = "pkcs8"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFakeGitHub(t)
			dir := t.TempDir()
			cfg, _ := withApp(t, f, dir, pkcs8)
			a, _ := newAction(t, f, cfg, dir)
			for _, n := range []string{"app-1", "app-2", "app-3"} {
				mustDrive(t, newResource(n, `{}`), a.Reconcile)
			}
			f.mu.Lock()
			exchanges := f.exchanges
			f.mu.Unlock()
			if exchanges != 1 {
				t.Fatalf("token exchanges = %d, want 1 (cached)", exchanges)
			}
			// 56 minutes on, the hour-long token is within 5 minutes of expiry: renewed.
			f.clk.advance(56 * time.Minute)
			mustDrive(t, newResource("app-4", `{}`), a.Reconcile)
			f.mu.Lock()
			exchanges = f.exchanges
			f.mu.Unlock()
			if exchanges != 2 {
				t.Fatalf("token exchanges after 56m = %d, want 2 (refreshed)", exchanges)
			}
		})
	}
}

func TestGitHubAppWrongID(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	dir := t.TempDir()
	_, _ = withApp(t, f, dir, false)
	cfg := f.config(map[string]any{"token": nil, "app": map[string]any{
		"appID": 1, "installationID": 777, "privateKeyFile": filepath.Join(dir, "app.pem")}})
	a, _ := newAction(t, f, cfg, t.TempDir())
	r := newResource("wrongapp", `{}`)
	_, err := a.Reconcile(t.Context(), r.request())
	if err == nil || !strings.Contains(err.Error(), "github app 1 installation 777") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err = %v; want the exchange's 401 naming the app", err)
	}
	if _, d, _, _ := f.counters(); d != 0 {
		t.Errorf("dispatched without a token")
	}
	if st := r.decoded(t); st.Phase != "" {
		t.Errorf("state after a refused token exchange = %+v; want the intent withdrawn", st)
	}
}

// TestSecretsNeverLeak drives failures that echo credentials (a server quoting the bad
// token, a workflow publishing it in its outputs) and checks every error, message,
// condition, output, State, checkpoint and log line.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	type seen struct {
		mu    sync.Mutex
		texts []string
	}
	collect := func(s *seen, v ...any) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, x := range v {
			switch x := x.(type) {
			case error:
				if x != nil {
					s.texts = append(s.texts, x.Error())
				}
			case actions.Result:
				b, _ := json.Marshal(x.Outputs)
				c, _ := json.Marshal(x.Conditions)
				s.texts = append(s.texts, x.Message, string(x.State), string(b), string(c))
			case actions.Observation:
				b, _ := json.Marshal(x.Outputs)
				s.texts = append(s.texts, x.Message, string(b))
			}
		}
	}

	t.Run("token", func(t *testing.T) {
		t.Parallel()
		f := newFakeGitHub(t)
		f.echoToken = true
		f.shapeRun = func(r *fakeRun) { r.Outputs = []byte(`{"leaked":"` + f.token + `"}`) }
		a, logs := newAction(t, f, f.config(nil), t.TempDir())
		s := &seen{}
		r := newResource("leaky", checkWith)
		res, err := drive(t, r, a.Reconcile)
		collect(s, res, err)
		obs, err := a.Observe(t.Context(), r.request())
		collect(s, obs, err)

		// A wrong token, quoted back by the server.
		bad := "ghp_" + randomHex(18)
		b, _ := newAction(t, f, f.config(map[string]any{"token": bad}), t.TempDir())
		res, err = b.Reconcile(t.Context(), newResource("bad", `{}`).request())
		collect(s, res, err)
		if err == nil || !strings.Contains(err.Error(), redacted) {
			t.Errorf("bad token: err = %v; want the echoed token redacted", err)
		}
		if !strings.Contains(string(actiontest.MustJSON(t, r.decoded(t).Outputs)), redacted) {
			t.Errorf("outputs %s: want the published token redacted", r.decoded(t).Outputs)
		}
		for _, cp := range r.checkpoints {
			s.texts = append(s.texts, string(cp))
		}
		s.texts = append(s.texts, logs.String())
		assertNoSecret(t, s.texts, []string{f.token, bad})
	})

	t.Run("app", func(t *testing.T) {
		t.Parallel()
		f := newFakeGitHub(t)
		f.echoToken = true
		dir := t.TempDir()
		cfg, pemText := withApp(t, f, dir, false)
		f.shapeRun = func(r *fakeRun) {
			// Runs under f.mu: publish the live installation token and a key line.
			for tok := range f.tokens {
				r.Outputs = []byte(`{"leaked":"` + tok + `","key":"` + pemLine(pemText) + `"}`)
			}
		}
		a, logs := newAction(t, f, cfg, dir)
		s := &seen{}
		r := newResource("leaky-app", checkWith)
		res, err := drive(t, r, a.Reconcile)
		collect(s, res, err)
		obs, err := a.Observe(t.Context(), r.request())
		collect(s, obs, err)

		// The installation token is revoked; the server quotes it back in its 401.
		f.mu.Lock()
		var tokens []string
		for tok := range f.tokens {
			tokens = append(tokens, tok)
			delete(f.tokens, tok)
		}
		f.mu.Unlock()
		r2 := newResource("revoked", `{}`)
		res, err = a.Reconcile(t.Context(), r2.request())
		collect(s, res, err)
		if err == nil || !strings.Contains(err.Error(), redacted) {
			t.Errorf("revoked token: err = %v; want the echoed token redacted", err)
		}
		for _, cp := range append(r.checkpoints, r2.checkpoints...) {
			s.texts = append(s.texts, string(cp))
		}
		s.texts = append(s.texts, logs.String())
		secrets := append(tokens, pemText)
		for line := range strings.SplitSeq(pemText, "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				secrets = append(secrets, line)
			}
		}
		assertNoSecret(t, s.texts, secrets)
	})
}

func pemLine(pemText string) string { return strings.Split(pemText, "\n")[3] }

func assertNoSecret(t *testing.T, texts, secrets []string) {
	t.Helper()
	if len(texts) < 5 {
		t.Fatalf("collected only %d texts", len(texts))
	}
	for _, s := range secrets {
		if s == "" {
			t.Fatal("empty secret")
		}
		for _, text := range texts {
			if strings.Contains(text, s) {
				t.Errorf("secret %.8s… appears in %q", s, text)
			}
		}
	}
}
