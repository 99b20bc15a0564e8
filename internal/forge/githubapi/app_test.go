package githubapi

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
)

const (
	testAppID          = 4242
	testInstallationID = 777
)

var (
	testKeyOnce sync.Once
	testKeys    [2]*rsa.PrivateKey
)

// appKeys returns the App's key and an unrelated one (generated once: RSA generation is
// slow under -race).
func appKeys(t *testing.T) (app, other *rsa.PrivateKey) {
	t.Helper()
	testKeyOnce.Do(func() {
		for i := range testKeys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			testKeys[i] = k
		}
	})
	return testKeys[0], testKeys[1]
}

// writeKey writes key to dir as GitHub hands it out (PKCS#1 PEM) or as PKCS#8 and returns
// the path and the PEM text.
func writeKey(t *testing.T, dir string, key *rsa.PrivateKey, pkcs8 bool) (string, string) {
	t.Helper()
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	if pkcs8 {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		block = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	text := string(pem.EncodeToMemory(block))
	path := filepath.Join(dir, "app.pem")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, text
}

// testClock is a settable clock; onNow, when set, is called by every reading.
type testClock struct {
	mu    sync.Mutex
	t     time.Time
	onNow func()
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.onNow != nil {
		c.onNow()
	}
	return c.t
}

// current reads the clock without calling onNow (for the server side).
func (c *testClock) current() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *testClock) setOnNow(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onNow = f
}

// fakeGitHub is GitHub's installation token endpoint: it checks the App JWT like GitHub
// and issues tokens living ttl on clk.
type fakeGitHub struct {
	t   *testing.T
	srv *httptest.Server
	clk *testClock
	pub *rsa.PublicKey

	mu        sync.Mutex
	ttl       time.Duration
	exchanges int      // tokens issued
	jwts      []string // JWTs seen
	// respond, when set, answers instead of issuing a token.
	respond func(w http.ResponseWriter)
	// hold, when set, parks the next exchange (reporting it on arrived) until hold is closed
	// or the client hangs up.
	hold    chan struct{}
	arrived chan struct{}
}

func newFakeGitHub(t *testing.T, prefix string) *fakeGitHub {
	t.Helper()
	key, _ := appKeys(t)
	f := &fakeGitHub{
		t:   t,
		clk: &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)},
		pub: &key.PublicKey,
		ttl: time.Hour,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+prefix+"/app/installations/{id}/access_tokens", f.accessToken)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) counts() (exchanges int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exchanges
}

func (f *fakeGitHub) seenJWTs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.jwts...)
}

// set changes the fake's behaviour under its lock.
func (f *fakeGitHub) set(change func(f *fakeGitHub)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// parkNext makes the next exchange wait; release lets it go on.
func (f *fakeGitHub) parkNext() (arrived <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold, f.arrived = make(chan struct{}), make(chan struct{})
	hold := f.hold
	return f.arrived, sync.OnceFunc(func() { close(hold) })
}

func (f *fakeGitHub) accessToken(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	hold, arrived := f.hold, f.arrived
	f.hold, f.arrived = nil, nil
	f.mu.Unlock()
	if hold != nil {
		close(arrived)
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	jwt, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "A JSON web token could not be decoded"})
		return
	}
	f.jwts = append(f.jwts, jwt)
	if err := verifyJWT(jwt, f.pub, testAppID, f.clk.current()); err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": err.Error(), "documentation_url": "https://docs.github.com/rest"})
		return
	}
	if r.PathValue("id") != strconv.Itoa(testInstallationID) {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	if f.respond != nil {
		f.respond(w)
		return
	}
	f.exchanges++
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	writeJSON(w, http.StatusCreated, map[string]any{
		"token":       "ghs_" + hex.EncodeToString(b),
		"expires_at":  f.clk.current().Add(f.ttl).UTC().Truncate(time.Second).Format(time.RFC3339),
		"permissions": map[string]string{"contents": "read"}, "repository_selection": "selected",
	})
}

// verifyJWT checks an App JWT like GitHub: RS256 signed by the App's key, iss = app id, iat
// in the past, exp in the future and at most 10 minutes after iat.
func verifyJWT(jwt string, pub *rsa.PublicKey, appID int64, now time.Time) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("A JSON web token could not be decoded")
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &header); err != nil || header.Alg != "RS256" {
		return errors.New("'alg' must be RS256")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return errors.New("A JSON web token could not be decoded")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig); err != nil {
		return errors.New("'Issuer' claim ('iss') must be an Integer or bad signature")
	}
	var claims struct {
		Iat int64  `json:"iat"`
		Exp int64  `json:"exp"`
		Iss string `json:"iss"`
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		return errors.New("A JSON web token could not be decoded")
	}
	switch {
	case claims.Iss != strconv.FormatInt(appID, 10):
		return errors.New("Integration not found")
	case claims.Iat > now.Unix()+1:
		return errors.New("'Issued at' claim ('iat') must be an Integer representing a time in the past")
	case claims.Exp <= now.Unix():
		return errors.New("'Expiration time' claim ('exp') is too far in the past")
	case claims.Exp-claims.Iat > 600:
		return errors.New("'Expiration time' claim ('exp') is too far in the future")
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type bundle struct {
	f       *fakeGitHub
	src     *App
	keyPath string
	keyPEM  string
}

// setup returns a fake GitHub and an App of the App installation it knows.
func setup(t *testing.T, pkcs8 bool) bundle {
	t.Helper()
	f := newFakeGitHub(t, "")
	key, _ := appKeys(t)
	path, text := writeKey(t, t.TempDir(), key, pkcs8)
	src, err := NewApp(AppConfig{AppID: testAppID, InstallationID: testInstallationID, PrivateKeyFile: path,
		BaseURL: f.srv.URL, Now: f.clk.now}, f.srv.Client())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return bundle{f: f, src: src, keyPath: path, keyPEM: text}
}

func mustToken(t *testing.T, s *App) string {
	t.Helper()
	tok, err := s.Token(t.Context())
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	if !strings.HasPrefix(tok, "ghs_") {
		t.Fatalf("Token = %q, want an installation token", tok)
	}
	return tok
}

func TestTokenCachedAndRefreshed(t *testing.T) {
	t.Parallel()
	for _, pkcs8 := range []bool{false, true} {
		t.Run(fmt.Sprintf("pkcs8=%v", pkcs8), func(t *testing.T) {
			t.Parallel()
			b := setup(t, pkcs8)
			first := mustToken(t, b.src)
			for range 3 {
				if tok := mustToken(t, b.src); tok != first {
					t.Fatalf("second Token = %q, want the cached %q", tok, first)
				}
			}
			// 54 minutes on, the hour-long token has 6 minutes left: still served.
			b.f.clk.advance(54 * time.Minute)
			if tok := mustToken(t, b.src); tok != first || b.f.counts() != 1 {
				t.Fatalf("after 54m: token changed %v, exchanges %d; want the cached token", tok != first, b.f.counts())
			}
			// 56 minutes on, it is within 5 minutes of its expiry: renewed.
			b.f.clk.advance(2 * time.Minute)
			second := mustToken(t, b.src)
			if second == first || b.f.counts() != 2 {
				t.Fatalf("after 56m: token changed %v, exchanges %d; want a new token", second != first, b.f.counts())
			}
			if tok := mustToken(t, b.src); tok != second || b.f.counts() != 2 {
				t.Fatalf("the renewed token is not cached")
			}
		})
	}
}

func TestShortLivedTokenReused(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.f.set(func(f *fakeGitHub) { f.ttl = 4 * time.Minute }) // less than the refresh margin: renewed at half its life
	first := mustToken(t, b.src)
	b.f.clk.advance(time.Minute)
	if tok := mustToken(t, b.src); tok != first || b.f.counts() != 1 {
		t.Fatalf("after 1m of 4m: exchanges %d; want the token reused", b.f.counts())
	}
	b.f.clk.advance(time.Minute)
	if tok := mustToken(t, b.src); tok == first || b.f.counts() != 2 {
		t.Fatalf("after 2m of 4m: exchanges %d; want a new token", b.f.counts())
	}
}

func TestGHESBaseURL(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t, "/api/v3")
	key, _ := appKeys(t)
	path, _ := writeKey(t, t.TempDir(), key, false)
	src, err := NewApp(AppConfig{AppID: testAppID, InstallationID: testInstallationID, PrivateKeyFile: path,
		BaseURL: f.srv.URL + "/api/v3", Now: f.clk.now}, f.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	mustToken(t, src)
}

// TestOneExchangeInFlight: concurrent callers share one exchange.
func TestOneExchangeInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	arrived, release := b.f.parkNext()
	const n = 16
	tokens := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			tok, err := b.src.Token(t.Context())
			if err != nil {
				t.Error(err)
			}
			tokens <- tok
		})
	}
	<-arrived
	release()
	wg.Wait()
	close(tokens)
	first := ""
	for tok := range tokens {
		if first == "" {
			first = tok
		}
		if tok == "" || tok != first {
			t.Errorf("callers got different tokens")
		}
	}
	if got := b.f.counts(); got != 1 {
		t.Errorf("exchanges = %d, want 1", got)
	}
}

// TestWaiterCanceled: a caller waiting for another's exchange honours its context.
func TestWaiterCanceled(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	arrived, release := b.f.parkNext()
	defer release()
	leader := make(chan error, 1)
	go func() {
		_, err := b.src.Token(t.Context())
		leader <- err
	}()
	<-arrived
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.src.Token(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter with a canceled context: err = %v, want context.Canceled", err)
	}
	release()
	if err := <-leader; err != nil {
		t.Fatalf("the exchange itself: %v", err)
	}
}

// TestLeaderCanceled: when the caller running the exchange gives up, a waiting caller
// exchanges itself instead of inheriting the cancellation.
func TestLeaderCanceled(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	mustToken(t, b.src)
	b.f.clk.advance(56 * time.Minute) // the cached token is due

	arrived, release := b.f.parkNext()
	defer release()
	leaderCtx, cancelLeader := context.WithCancel(t.Context())
	defer cancelLeader()
	leader := make(chan error, 1)
	go func() {
		_, err := b.src.Token(leaderCtx)
		leader <- err
	}()
	<-arrived

	// The waiter reads the clock (finding the token due) right before it waits for the
	// exchange in flight, which cannot end before cancelLeader.
	readClock := make(chan struct{})
	b.f.clk.setOnNow(sync.OnceFunc(func() { close(readClock) }))
	waiter := make(chan error, 1)
	go func() {
		_, err := b.src.Token(t.Context())
		waiter <- err
	}()
	<-readClock
	cancelLeader()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Errorf("leader: err = %v, want context.Canceled", err)
	}
	if err := <-waiter; err != nil {
		t.Fatalf("waiter: %v; want its own exchange", err)
	}
	if got := b.f.counts(); got != 2 {
		t.Errorf("tokens issued = %d, want 2", got)
	}
}

func TestTokenRefused(t *testing.T) {
	t.Parallel()
	_, otherKey := appKeys(t)
	dir := t.TempDir()
	otherPath, otherPEM := writeKey(t, dir, otherKey, false)
	for _, tc := range []struct {
		name    string
		cfg     func(b bundle) AppConfig
		respond func(w http.ResponseWriter)
		want    []string
		check   func(t *testing.T, err error)
	}{
		{
			name: "wrong app id",
			cfg: func(b bundle) AppConfig {
				return AppConfig{AppID: 1, InstallationID: testInstallationID, PrivateKeyFile: b.keyPath}
			},
			want: []string{"github app 1 installation 777", "401", "Integration not found"},
		},
		{
			name: "wrong key",
			cfg: func(b bundle) AppConfig {
				return AppConfig{AppID: testAppID, InstallationID: testInstallationID, PrivateKeyFile: otherPath}
			},
			want: []string{"github app 4242 installation 777", "401", "bad signature"},
		},
		{
			name: "wrong installation",
			cfg: func(b bundle) AppConfig {
				return AppConfig{AppID: testAppID, InstallationID: 9, PrivateKeyFile: b.keyPath}
			},
			want: []string{"github app 4242 installation 9", "404"},
		},
		{
			name: "rate limited",
			respond: func(w http.ResponseWriter) {
				w.Header().Set("X-RateLimit-Remaining", "0")
				w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
				writeJSON(w, http.StatusForbidden, map[string]any{"message": "API rate limit exceeded"})
			},
			want: []string{"403", "rate limit"},
			check: func(t *testing.T, err error) {
				var rle *github.RateLimitError
				if !errors.As(err, &rle) {
					t.Errorf("err %T does not carry a *github.RateLimitError", err)
				}
			},
		},
		{
			name: "server error",
			respond: func(w http.ResponseWriter) {
				writeJSON(w, http.StatusBadGateway, map[string]any{"message": "upstream refused"})
			},
			want: []string{"502"},
		},
		{
			name: "answer without a token",
			respond: func(w http.ResponseWriter) {
				writeJSON(w, http.StatusCreated, map[string]any{"expires_at": "2030-01-01T00:00:00Z"})
			},
			want: []string{"lacks token"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, false)
			b.f.set(func(f *fakeGitHub) { f.respond = tc.respond })
			src := b.src
			if tc.cfg != nil {
				cfg := tc.cfg(b)
				cfg.BaseURL, cfg.Now = b.f.srv.URL, b.f.clk.now
				var err error
				if src, err = NewApp(cfg, b.f.srv.Client()); err != nil {
					t.Fatal(err)
				}
			}
			for attempt := 1; attempt <= 2; attempt++ {
				tok, err := src.Token(t.Context())
				if err == nil {
					t.Fatalf("Token = %q, want an error", tok)
				}
				msg := err.Error()
				for _, w := range tc.want {
					if !strings.Contains(msg, w) {
						t.Errorf("err = %q, want it to contain %q", msg, w)
					}
				}
				if tc.check != nil {
					tc.check(t, err)
				}
				assertNoSecret(t, msg, b.keyPEM, otherPEM, b.f.seenJWTs())
			}
			// A refusal is not cached: each call asked again.
			if got := len(b.f.seenJWTs()); got != 2 {
				t.Errorf("exchanges attempted = %d, want 2", got)
			}
		})
	}
}

// assertNoSecret fails when msg quotes a line of a key or a JWT.
func assertNoSecret(t *testing.T, msg string, keyPEM, otherPEM string, jwts []string) {
	t.Helper()
	secrets := jwts
	for _, text := range []string{keyPEM, otherPEM} {
		for line := range strings.SplitSeq(text, "\n") {
			if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
				secrets = append(secrets, line)
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Errorf("error %q quotes a secret %.8s…", msg, s)
		}
	}
}

func TestJWTRedacted(t *testing.T) {
	t.Parallel()
	// A proxy that quotes the request it refused, Authorization header included.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "denied: " + r.Header.Get("Authorization")})
	}))
	t.Cleanup(srv.Close)
	key, _ := appKeys(t)
	path, _ := writeKey(t, t.TempDir(), key, false)
	src, err := NewApp(AppConfig{AppID: testAppID, InstallationID: testInstallationID, PrivateKeyFile: path, BaseURL: srv.URL}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Token(t.Context())
	if err == nil || strings.Contains(err.Error(), "eyJ") || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("err = %v; want the quoted JWT redacted", err)
	}
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusForbidden {
		t.Errorf("the redacted error lost its chain: %T", err)
	}
}

func TestNewInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const marker = "TOPSECRETKEYMATERIAL"
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := write("garbage.pem", "-----BEGIN RSA PRIVATE KEY-----\n"+marker+"xxxxxxxxxxxx\n-----END RSA PRIVATE KEY-----\n")
	garbage8 := write("garbage8.pem", "-----BEGIN PRIVATE KEY-----\n"+marker+"xxxxxxxxxxxx\n-----END PRIVATE KEY-----\n")
	notPEM := write("not.pem", marker+"\n")
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	ecPath := write("ec.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	cert := write("cert.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	key, _ := appKeys(t)
	good, _ := writeKey(t, t.TempDir(), key, false)

	for _, tc := range []struct {
		name string
		cfg  AppConfig
		want string
	}{
		{"no app id", AppConfig{InstallationID: 1, PrivateKeyFile: good}, "appID is required"},
		{"no installation id", AppConfig{AppID: 1, PrivateKeyFile: good}, "installationID is required"},
		{"no key", AppConfig{AppID: 1, InstallationID: 2}, "privateKeyFile is required"},
		{"missing key file", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyFile: filepath.Join(dir, "nope.pem")}, "no such file"},
		{"pkcs1 garbage", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyFile: garbage}, "invalid PKCS#1 RSA private key"},
		{"pkcs8 garbage", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyFile: garbage8}, "invalid PKCS#8 private key"},
		{"not PEM", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyFile: notPEM}, "no PEM block"},
		{"EC key", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyFile: ecPath}, "not an RSA key"},
		{"certificate", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyFile: cert}, `unexpected PEM block "CERTIFICATE"`},
		{"inline garbage", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyPEM: []byte(marker)}, "no PEM block"},
		{"bad baseURL", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyFile: good, BaseURL: "ftp://x"}, "not an http(s) URL"},
		{"baseURL credentials", AppConfig{AppID: 1, InstallationID: 2, PrivateKeyFile: good, BaseURL: "https://u:" + marker + "@x/"}, "may not carry credentials"},
	} {
		_, err := NewApp(tc.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), marker) {
			t.Errorf("%s: error %q quotes the key or credential", tc.name, err)
		}
	}
}

// TestJWT checks the claims GitHub requires, on the signing function itself.
func TestJWT(t *testing.T) {
	t.Parallel()
	key, other := appKeys(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	jwt, err := signJWT(key, testAppID, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyJWT(jwt, &key.PublicKey, testAppID, now); err != nil {
		t.Errorf("fresh JWT refused: %v", err)
	}
	if err := verifyJWT(jwt, &key.PublicKey, testAppID, now.Add(9*time.Minute)); err == nil {
		t.Error("JWT accepted after its 9-minute lifetime")
	}
	if err := verifyJWT(jwt, &other.PublicKey, testAppID, now); err == nil {
		t.Error("JWT accepted by another key")
	}
	// A server clock up to a minute behind still sees iat in the past.
	if err := verifyJWT(jwt, &key.PublicKey, testAppID, now.Add(-59*time.Second)); err != nil {
		t.Errorf("JWT refused by a clock 59s behind: %v", err)
	}
}
