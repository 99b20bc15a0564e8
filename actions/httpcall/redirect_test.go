package httpcall

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

// TestRedirectPolicy: the instance's client follows GET redirects within its origin only,
// refuses a downgrade and a move to another host with the shared rule's messages, and does
// not follow redirects of the call itself (POST), whose body must not be re-sent elsewhere.
func TestRedirectPolicy(t *testing.T) {
	t.Parallel()
	act, err := New(json.RawMessage(`{"url": "https://prov.example.com/api/", "headers": {"X-Api-Key": "key-0123456789"}}`), actions.Env{Name: "hook"})
	if err != nil {
		t.Fatal(err)
	}
	a := act.(*Action)
	req := func(method, url string) *http.Request {
		r, err := http.NewRequest(method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("X-Api-Key", "key-0123456789")
		return r
	}
	get := req(http.MethodGet, "https://prov.example.com/api/jobs/1")
	for _, tc := range []struct {
		name string
		next *http.Request
		via  []*http.Request
		want string // "" follows
	}{
		{"same origin", req(http.MethodGet, "https://prov.example.com/api/jobs/1/"), []*http.Request{get}, ""},
		{"downgrade", req(http.MethodGet, "http://prov.example.com/api/jobs/1"), []*http.Request{get}, "unencrypted"},
		{"another host", req(http.MethodGet, "https://cdn.example.net/jobs/1"), []*http.Request{get}, "credentials configured for prov.example.com"},
		{"the call itself", req(http.MethodGet, "https://prov.example.com/api/other"), []*http.Request{req(http.MethodPost, "https://prov.example.com/api/")}, http.ErrUseLastResponse.Error()},
	} {
		err := a.hc.CheckRedirect(tc.next, tc.via)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v; want %q", tc.name, err, tc.want)
		}
	}
	if err := a.hc.CheckRedirect(req(http.MethodGet, "https://prov.example.com/x"), []*http.Request{req(http.MethodPost, "https://prov.example.com/")}); !errors.Is(err, http.ErrUseLastResponse) {
		t.Errorf("POST: %v", err)
	}
}
