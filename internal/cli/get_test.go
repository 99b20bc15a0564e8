package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trueup-dev/trueup/internal/apiclient"
)

// A resource created while get pages through the list is measured against a clock read after
// the last page: its AGE is 0s, not <invalid>.
func TestGetResourcesClockAfterPaging(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	serverNow := t0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		item := func(name string, at time.Time) string {
			return fmt.Sprintf(`{"apiVersion":"v1","kind":"Thing","metadata":{"namespace":"ns","name":%q,"creationTimestamp":%q}}`, name, at.Format(time.RFC3339))
		}
		if r.URL.Query().Get("continue") == "" {
			fmt.Fprintf(w, `{"items":[%s],"continue":"next"}`, item("a", t0.Add(-time.Hour)))
			return
		}
		// The second page is served later, and holds a resource created meanwhile.
		serverNow = t0.Add(time.Minute)
		fmt.Fprintf(w, `{"items":[%s]}`, item("b", serverNow))
	}))
	defer srv.Close()
	c, err := apiclient.New(srv.URL, "", false, "test")
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return serverNow
	}
	var out, errOut bytes.Buffer
	if err := GetResources(context.Background(), c, clock, GetOptions{ChunkSize: 1, Output: OutTable}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "<invalid>") {
		t.Fatalf("an age reads <invalid>:\n%s", out.String())
	}
	for _, want := range []string{"a ", "61m", "b ", "0s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
