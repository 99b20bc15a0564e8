package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	a := setup(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"describe", "DatabaseCluster/nope"}, "resource default/DatabaseCluster/nope: not found"},
		{[]string{"history", "Bucket/nope", "-n", "production"}, "resource production/Bucket/nope: not found"},
		{[]string{"get", "resources", "-l", "=="}, "bad request: labelSelector: "},
		{[]string{"get", "pods"}, `cannot get "pods": want resources, types, sources or resourcesets`},
		{[]string{"get", "resources", "-o", "xml"}, `unknown output format "xml" (want table, wide, json or yaml)`},
		{[]string{"history", "Bucket/invoices", "-o", "wide"}, `unknown output format "wide" (want table, json or yaml)`},
		{[]string{"get", "types", "--phase", "Ready"}, "--phase does not apply to types"},
		{[]string{"get", "sources", "-n", "default"}, "--namespace does not apply to sources"},
		{[]string{"get", "resources", "-A", "-n", "default"}, "[all-namespaces namespace] were all set"},
		{[]string{"get", "resources", "--chunk-size", "0"}, "--chunk-size 0: want 1 to 1000"},
		{[]string{"describe", "orders-pg"}, `"orders-pg": want KIND/NAME`},
		{[]string{"events", "--for", "a/b/c"}, `--for "a/b/c": want KIND/NAME`},
		{[]string{"events", "--limit", "0"}, "--limit 0: want 1 to 1000"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			out, _, err := a.run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
			if out != "" {
				t.Errorf("stdout %q on error", out)
			}
		})
	}
}

func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	for _, server := range []string{"http://" + addr, addr} {
		_, _, err := runCLI(t, "--server", server, "get", "resources")
		want := "cannot reach the trueup API at http://" + addr + ": connection refused (is `trueup serve` running? point --server or TRUEUP_SERVER at it)"
		if err == nil || err.Error() != want {
			t.Errorf("--server %s: error %v, want %q", server, err, want)
		}
	}
	_, _, err = runCLI(t, "--server", "ftp://example.com", "get", "sources")
	if err == nil || !strings.Contains(err.Error(), `--server "ftp://example.com": want a URL such as http://127.0.0.1:8080`) {
		t.Errorf("ftp server: %v", err)
	}
}

// TestNotTheAPI points the CLI at something that answers, but not as trueup does.
func TestNotTheAPI(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/base/api/v1/sources" {
			w.Write([]byte("<html>login</html>"))
			return
		}
		http.Error(w, "upstream down", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	_, _, err := runCLI(t, "--server", srv.URL, "get", "types")
	if want := "GET /api/v1/resourcetypes: 502 Bad Gateway (is " + srv.URL + " a trueup API?)"; err == nil || err.Error() != want {
		t.Errorf("502: %v, want %q", err, want)
	}
	_, _, err = runCLI(t, "--server", srv.URL+"/base/", "get", "sources")
	if err == nil || !strings.Contains(err.Error(), "GET /api/v1/sources: unexpected answer (is "+srv.URL+"/base a trueup API?)") {
		t.Errorf("html: %v", err)
	}
}

func TestServerDefault(t *testing.T) {
	t.Setenv("TRUEUP_SERVER", "")
	if got := serverDefault(); got != "http://127.0.0.1:8080" {
		t.Errorf("default %q", got)
	}
	t.Setenv("TRUEUP_SERVER", "http://trueup.internal:9000")
	if got := newRootCmd().PersistentFlags().Lookup("server").DefValue; got != "http://trueup.internal:9000" {
		t.Errorf("from TRUEUP_SERVER: %q", got)
	}
}
