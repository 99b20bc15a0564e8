package daemon

import (
	"strings"
	"sync"
	"testing"

	"github.com/trueup-dev/trueup/internal/logbuf"
)

// TestLogLinesScrubbedOfCallSecrets: while a call holds its revealed values, every log line
// is scrubbed of them (JSON-escaped forms too); once released, they are ordinary text again.
func TestLogLinesScrubbedOfCallSecrets(t *testing.T) {
	var out logbuf.Buffer // slog serialises its writes; the test's goroutines need a safe sink
	w := NewScrubWriter(&out, func(s string) string { return s })
	release := w.calls.hold([]string{"call-secret-1", `quo"ted-2`})
	release2 := w.calls.hold([]string{"call-secret-1"})
	_, _ = w.Write([]byte(`msg="failed" body="user call-secret-1 and quo\"ted-2"` + "\n"))
	release()
	_, _ = w.Write([]byte("still held: call-secret-1, gone: quo\"ted-2\n"))
	release2()
	_, _ = w.Write([]byte("released: call-secret-1\n"))
	want := "msg=\"failed\" body=\"user *** and ***\"\nstill held: ***, gone: quo\"ted-2\nreleased: call-secret-1\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	// Concurrent calls and writes.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				r := w.calls.hold([]string{"concurrent-secret"})
				_, _ = w.Write([]byte("x concurrent-secret\n"))
				r()
			}
		}()
	}
	wg.Wait()
	if strings.Contains(out.String(), "x concurrent-secret") {
		t.Fatal("a line written during a call kept its secret")
	}
}
