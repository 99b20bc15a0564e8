package gitsource

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitHTTPServer serves the repositories under root with `git http-backend` (smart HTTP),
// behind basic auth when user is set. block, when set, is called for upload-pack requests
// (the fetch itself, after the ref advertisement) instead of serving them.
func gitHTTPServer(t *testing.T, root, user, pass string, block func(r *http.Request)) *httptest.Server {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Env:  append([]string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, gitEnv...),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		if block != nil && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			block(r)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPBasicAuth(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"m/a.yaml": "a: 1\n"})
	root := filepath.Dir(r.dir)
	const password = "s3cret-Passw0rd"
	srv := gitHTTPServer(t, root, "bot", password, nil)
	repoURL := srv.URL + "/repo"

	tests := []struct {
		name    string
		url     string
		auth    Auth
		wantErr bool
	}{
		{"right credentials", repoURL, Auth{Username: "bot", Password: password}, false},
		{"credentials in the url", strings.Replace(repoURL, "http://", "http://bot:"+password+"@", 1), Auth{}, false},
		{"wrong password", repoURL, Auth{Username: "bot", Password: "wrong-" + password}, true},
		{"wrong password in the url", strings.Replace(repoURL, "http://", "http://bot:wrong-"+password+"@", 1), Auth{}, true},
		{"token without user", repoURL, Auth{Password: "token-" + password}, true},
		{"no credentials", repoURL, Auth{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSource(t, Config{URL: tt.url, Path: "m", Auth: tt.auth})
			ctx := testContext(t)
			head, headErr := s.Head(ctx)
			snap, fetchErr := s.Fetch(ctx, rev)
			if !tt.wantErr {
				if headErr != nil || fetchErr != nil {
					t.Fatalf("Head: %v; Fetch: %v", headErr, fetchErr)
				}
				if head != rev || snap.Revision != rev || len(snap.Files) != 1 {
					t.Errorf("head %s, snapshot %+v; want %s", head, snap, rev)
				}
				return
			}
			for _, err := range []error{headErr, fetchErr} {
				if err == nil {
					t.Fatal("want an authentication error")
				}
				msg := err.Error()
				t.Log(msg)
				if strings.Contains(msg, password) {
					t.Errorf("error %q leaks the password", msg)
				}
				if !strings.Contains(msg, srv.URL+"/repo") && !strings.Contains(msg, "@"+strings.TrimPrefix(srv.URL, "http://")+"/repo") {
					t.Errorf("error %q does not name the url", msg)
				}
				if !strings.Contains(strings.ToLower(msg), "auth") {
					t.Errorf("error %q does not say authentication failed", msg)
				}
			}
		})
	}
}

func TestHTTPTokenAuth(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"a.yaml": "a: 1\n"})
	srv := gitHTTPServer(t, filepath.Dir(r.dir), defaultTokenUser, "ghs_token", nil)
	s := newSource(t, Config{URL: srv.URL + "/repo", Auth: Auth{Password: "ghs_token"}})
	ctx := testContext(t)
	head, err := s.Head(ctx)
	if err != nil || head != rev {
		t.Fatalf("Head = %s, %v; want %s", head, err, rev)
	}
	if _, err := s.Fetch(ctx, head); err != nil {
		t.Fatal(err)
	}
}

func TestHTTPFetchCanceled(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"a.yaml": "a: 1\n"})
	started := make(chan struct{}, 1)
	srv := gitHTTPServer(t, filepath.Dir(r.dir), "", "", func(req *http.Request) {
		select {
		case started <- struct{}{}:
		default:
		}
		// A server that never answers. The body is read first: only then does net/http
		// notice the client hanging up and cancel the request's context.
		_, _ = io.Copy(io.Discard, req.Body)
		<-req.Context().Done()
	})
	dir := filepath.Join(t.TempDir(), "mirror")
	s := newSource(t, Config{URL: srv.URL + "/repo", Dir: dir})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Fetch(ctx, rev)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("fetch never reached the server")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Fetch error = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Fetch did not return after cancel")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("a canceled fetch left %d entries in the mirror dir", len(entries))
	}
}
