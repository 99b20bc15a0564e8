package gitsource

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hungServer accepts TCP connections on 127.0.0.1 and never answers, like a Git server whose
// backend is stuck. Connections are closed when the test ends.
func hungServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }() // read, never write
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// TestHungServerTimesOut: ls-remote and fetch against a server that accepts and never answers
// fail after Config.Timeout (http and git protocols) with an error that names the redacted URL
// and says why.
func TestHungServerTimesOut(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	addr := hungServer(t)
	for _, tc := range []struct {
		name, url string
		redacted  string
	}{
		{"https with password", "http://bot:hunter2-secret@" + addr + "/infra.git", "http://bot@" + addr + "/infra.git"},
		{"git protocol", "git://" + addr + "/infra.git", "git://" + addr + "/infra.git"},
		// Not ssh: go-git's ssh handshake (ssh.NewClientConn) ignores the context, so a server
		// that accepts and never sends its banner holds the call until the connection drops.
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSource(t, Config{URL: tc.url, Timeout: timeout})
			for _, op := range []struct {
				name string
				call func(context.Context) error
			}{
				{"ls-remote", func(ctx context.Context) error { _, err := s.Head(ctx); return err }},
				{"fetch", func(ctx context.Context) error { _, err := s.Fetch(ctx, ""); return err }},
			} {
				start := time.Now()
				err := op.call(testContext(t))
				took := time.Since(start)
				t.Logf("%s: %s after %s", op.name, err, took.Round(time.Millisecond))
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%s error = %v, want a deadline", op.name, err)
				}
				if took > timeout+2*time.Second {
					t.Errorf("%s took %s with a %s timeout", op.name, took, timeout)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, op.name+" ") || !strings.Contains(msg, " at "+tc.redacted+": ") ||
					!strings.Contains(msg, "no answer within 300ms") || strings.Contains(msg, "hunter2") {
					t.Errorf("%s error %q: want the operation, the redacted URL and the timeout", op.name, msg)
				}
			}
		})
	}
}

// TestFetchTimesOutAfterAdvertisement: a server that advertises its refs and then stalls the
// pack (upload-pack never answers) fails the fetch after the timeout.
func TestFetchTimesOutAfterAdvertisement(t *testing.T) {
	t.Parallel()
	r := newTestRepo(t)
	rev := r.commit(map[string]string{"a.yaml": "a: 1\n"})
	srv := gitHTTPServer(t, filepath.Dir(r.dir), "", "", func(req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		<-req.Context().Done()
	})
	s := newSource(t, Config{URL: srv.URL + "/repo", Timeout: 300 * time.Millisecond})
	head, err := s.Head(testContext(t))
	if err != nil || head != rev {
		t.Fatalf("Head = %s, %v", head, err)
	}
	start := time.Now()
	_, err = s.Fetch(testContext(t), head)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 300ms") ||
		!strings.Contains(err.Error(), srv.URL+"/repo") {
		t.Fatalf("Fetch error = %v, want a timeout naming the URL", err)
	}
	t.Logf("stalled fetch: %s after %s", err, time.Since(start).Round(time.Millisecond))
}
