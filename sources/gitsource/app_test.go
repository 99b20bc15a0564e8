package gitsource

import (
	"context"
	"crypto"
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
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/forge/githubapi"
)

const (
	appID          = 4242
	installationID = 777
)

var (
	appKeyOnce sync.Once
	appKeys    [2]*rsa.PrivateKey // the App's key, and one GitHub does not know
)

// writeAppKeys writes the App's key and an unknown one as PKCS#1 PEM (as GitHub hands them
// out) and returns their paths and texts. The keys are generated once: RSA generation is
// slow under -race.
func writeAppKeys(t *testing.T) (paths, texts [2]string) {
	t.Helper()
	appKeyOnce.Do(func() {
		var wg sync.WaitGroup
		for i := range appKeys {
			wg.Go(func() {
				k, err := rsa.GenerateKey(rand.Reader, 2048)
				if err != nil {
					panic(err)
				}
				appKeys[i] = k
			})
		}
		wg.Wait()
	})
	dir := t.TempDir()
	for i, k := range appKeys {
		texts[i] = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
		paths[i] = filepath.Join(dir, fmt.Sprintf("app-%d.pem", i))
		if err := os.WriteFile(paths[i], []byte(texts[i]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return paths, texts
}

// fakeGitHub issues installation tokens (POST /app/installations/{id}/access_tokens, App
// JWT checked) living ttl on its clock, and serves Git over smart HTTP to the current token
// only, as user x-access-token: a token that was replaced or expired is refused.
type fakeGitHub struct {
	srv *httptest.Server

	mu        sync.Mutex
	now       time.Time
	ttl       time.Duration
	issued    []string // every token, oldest first
	expires   time.Time
	gitTokens []string // the password of every Git request, in order
	// quote makes Git requests fail with a 403 that quotes the token sent.
	quote bool
}

func newFakeGitHub(t *testing.T, repoRoot string, pub *rsa.PublicKey) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), ttl: 10 * time.Minute}
	gitSrv := gitHTTPServer(t, repoRoot, "", "", nil)
	backend, err := url.Parse(gitSrv.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(backend)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /app/installations/{id}/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		f.accessToken(w, r, pub)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		f.mu.Lock()
		f.gitTokens = append(f.gitTokens, pass)
		ok := user == "x-access-token" && len(f.issued) > 0 && pass == f.issued[len(f.issued)-1] && f.now.Before(f.expires)
		quote := f.quote
		f.mu.Unlock()
		switch {
		case quote:
			http.Error(w, "token "+pass+" lacks the contents permission", http.StatusForbidden)
		case !ok:
			w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
			http.Error(w, "Invalid username or token.", http.StatusUnauthorized)
		default:
			proxy.ServeHTTP(w, r)
		}
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeGitHub) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fakeGitHub) state() (issued, gitTokens []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.issued...), append([]string(nil), f.gitTokens...)
}

func (f *fakeGitHub) accessToken(w http.ResponseWriter, r *http.Request, pub *rsa.PublicKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	jwt, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if err := checkAppJWT(jwt, pub, f.now); err != nil {
		writeJSONError(w, http.StatusUnauthorized, err.Error())
		return
	}
	if r.PathValue("id") != strconv.Itoa(installationID) {
		writeJSONError(w, http.StatusNotFound, "Not Found")
		return
	}
	b := make([]byte, 18)
	_, _ = rand.Read(b)
	tok := "ghs_" + hex.EncodeToString(b)
	f.issued = append(f.issued, tok)
	f.expires = f.now.Add(f.ttl).Truncate(time.Second)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]any{"token": tok, "expires_at": f.expires.Format(time.RFC3339)})
}

// checkAppJWT checks what GitHub checks of an App JWT: RS256 by the App's key, iss = app id,
// and a validity of at most 10 minutes around now.
func checkAppJWT(jwt string, pub *rsa.PublicKey, now time.Time) error {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return errors.New("A JSON web token could not be decoded")
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err != nil || rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) != nil {
		return errors.New("'Issuer' claim ('iss') must be an Integer or bad signature")
	}
	var claims struct {
		Iat, Exp int64
		Iss      string
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		return errors.New("A JSON web token could not be decoded")
	}
	switch {
	case claims.Iss != strconv.Itoa(appID):
		return errors.New("Integration not found")
	case claims.Iat > now.Unix() || claims.Exp <= now.Unix() || claims.Exp-claims.Iat > 600:
		return errors.New("'Expiration time' claim ('exp') is invalid")
	}
	return nil
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest"})
}

type appSetup struct {
	repo     *testRepo
	f        *fakeGitHub
	keyPaths [2]string
	keyTexts [2]string
}

func setupApp(t *testing.T) appSetup {
	t.Helper()
	paths, texts := writeAppKeys(t)
	r := newTestRepo(t)
	return appSetup{repo: r, f: newFakeGitHub(t, filepath.Dir(r.dir), &appKeys[0].PublicKey), keyPaths: paths, keyTexts: texts}
}

// source returns a Git source authenticating as the App with key (0 known, 1 unknown).
func (a appSetup) source(t *testing.T, key int) *Source {
	t.Helper()
	app, err := githubapi.NewApp(githubapi.AppConfig{AppID: appID, InstallationID: installationID, PrivateKeyFile: a.keyPaths[key],
		BaseURL: a.f.srv.URL, Now: a.f.clock}, a.f.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return newSource(t, Config{URL: a.f.srv.URL + "/repo", Auth: Auth{TokenFunc: app.Token}})
}

func TestGitHubAppToken(t *testing.T) {
	t.Parallel()
	a := setupApp(t)
	rev1 := a.repo.commit(map[string]string{"a.yaml": "a: 1\n"})
	s := a.source(t, 0)
	ctx := testContext(t)

	head, err := s.Head(ctx)
	if err != nil || head != rev1 {
		t.Fatalf("Head = %s, %v; want %s", head, err, rev1)
	}
	snap, err := s.Fetch(ctx, head)
	if err != nil || snap.Revision != rev1 || len(snap.Files) != 1 {
		t.Fatalf("Fetch = %+v, %v", snap, err)
	}
	issued, gitTokens := a.f.state()
	if len(issued) != 1 {
		t.Fatalf("tokens issued = %d, want 1 (cached between Head and Fetch)", len(issued))
	}
	for _, tok := range gitTokens {
		if tok != issued[0] {
			t.Fatalf("a Git request carried %q, want the installation token", tok)
		}
	}

	// 6 minutes into the token's 10: due for renewal. The fake now refuses the first token,
	// so the fetch succeeds only with the renewed one.
	a.f.advance(6 * time.Minute)
	rev2 := a.repo.commit(map[string]string{"a.yaml": "a: 2\n"})
	if snap, err = s.Fetch(ctx, ""); err != nil || snap.Revision != rev2 {
		t.Fatalf("Fetch after renewal = %+v, %v; want %s", snap, err, rev2)
	}
	issued, gitTokens = a.f.state()
	if len(issued) != 2 || gitTokens[len(gitTokens)-1] != issued[1] {
		t.Fatalf("tokens issued %d; want 2, the last Git request with the new one", len(issued))
	}

	// Long after the token expired: a new one again.
	a.f.advance(time.Hour)
	rev3 := a.repo.commit(map[string]string{"a.yaml": "a: 3\n"})
	if head, err = s.Head(ctx); err != nil || head != rev3 {
		t.Fatalf("Head after expiry = %s, %v; want %s", head, err, rev3)
	}
	if snap, err = s.Fetch(ctx, head); err != nil || snap.Revision != rev3 {
		t.Fatalf("Fetch after expiry = %+v, %v", snap, err)
	}
	if issued, _ = a.f.state(); len(issued) != 3 {
		t.Fatalf("tokens issued = %d, want 3", len(issued))
	}
}

// TestGitHubAppErrorsKeepSecrets: a refused token exchange and a server quoting the token
// both give clear errors without the key, the JWT or the token.
func TestGitHubAppErrorsKeepSecrets(t *testing.T) {
	t.Parallel()
	a := setupApp(t)
	rev := a.repo.commit(map[string]string{"a.yaml": "a: 1\n"})
	good := a.source(t, 0)
	ctx := testContext(t)
	if _, err := good.Head(ctx); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, op string, err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: want an error", op)
		}
		msg := err.Error()
		t.Log(msg)
		for _, w := range append(want, a.f.srv.URL+"/repo") {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: error %q does not contain %q", op, msg, w)
			}
		}
		issued, _ := a.f.state()
		secrets := append(issued, "eyJ") // every JWT starts with the encoded {"
		for _, text := range a.keyTexts {
			for line := range strings.SplitSeq(text, "\n") {
				if len(line) >= 16 && !strings.HasPrefix(line, "-----") {
					secrets = append(secrets, line)
				}
			}
		}
		for _, sec := range secrets {
			if strings.Contains(msg, sec) {
				t.Errorf("%s: error %q quotes a secret %.8s…", op, msg, sec)
			}
		}
	}

	t.Run("wrong key", func(t *testing.T) {
		s := a.source(t, 1)
		_, err := s.Head(ctx)
		check(t, "Head", err, "ls-remote branch main", "github app 4242 installation 777", "401", "bad signature")
		_, err = s.Fetch(ctx, rev)
		check(t, "Fetch", err, "fetch branch main", "github app 4242 installation 777", "401")
		if s.Fetches() != 0 {
			t.Errorf("fetches = %d; want none without a token", s.Fetches())
		}
	})

	t.Run("token quoted by the server", func(t *testing.T) {
		a.f.mu.Lock()
		a.f.quote = true
		a.f.mu.Unlock()
		_, err := good.Head(ctx)
		check(t, "Head", err, "ls-remote branch main", "token *** lacks")
		_, err = good.Fetch(ctx, rev)
		check(t, "Fetch", err, "fetch branch main", "token *** lacks")
	})
}

func TestTokenFuncValidation(t *testing.T) {
	t.Parallel()
	tokenFunc := func(context.Context) (string, error) { return "ghs_x", nil }
	for _, tc := range []struct {
		name string
		url  string
		auth Auth
		want string
	}{
		{"with password", "https://github.com/acme/infra.git", Auth{Password: "hunter22", TokenFunc: tokenFunc}, "excludes username and password"},
		{"with username", "https://github.com/acme/infra.git", Auth{Username: "bot", TokenFunc: tokenFunc}, "excludes username and password"},
		{"with ssh key", "https://github.com/acme/infra.git", Auth{SSHKeyFile: "/k", TokenFunc: tokenFunc}, "excludes sshKeyFile"},
		{"with url credentials", "https://bot:hunter22@github.com/acme/infra.git", Auth{TokenFunc: tokenFunc}, "excludes credentials in the url"},
		{"ssh url", "ssh://git@github.com/acme/infra.git", Auth{TokenFunc: tokenFunc}, "https urls only"},
		{"local path", "/srv/git/infra", Auth{TokenFunc: tokenFunc}, "https urls only"},
	} {
		_, err := New(Config{Name: "x", URL: tc.url, Auth: tc.auth, Dir: t.TempDir()}, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		} else if strings.Contains(err.Error(), "hunter22") {
			t.Errorf("%s: error %q quotes the password", tc.name, err)
		}
	}
}

func TestTokenFuncFailure(t *testing.T) {
	t.Parallel()
	boom := errors.New("token endpoint down")
	for _, tc := range []struct {
		name string
		fn   func(context.Context) (string, error)
		want string
	}{
		{"error", func(context.Context) (string, error) { return "", boom }, "get token: token endpoint down"},
		{"empty token", func(context.Context) (string, error) { return "", nil }, "empty token"},
	} {
		s := newSource(t, Config{URL: "http://127.0.0.1:1/repo", Auth: Auth{TokenFunc: tc.fn}})
		_, err := s.Head(testContext(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Head err = %v, want %q", tc.name, err, tc.want)
		}
		if tc.name == "error" && !errors.Is(err, boom) {
			t.Errorf("Head err = %v lost the token source's error", err)
		}
		if _, err := s.Fetch(testContext(t), ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Fetch err = %v, want %q", tc.name, err, tc.want)
		}
	}
}
