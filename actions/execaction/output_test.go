package execaction

import "testing"

func TestTailWriter(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-token"
	w := &tailWriter{keep: 16 + len(secret)}
	for range 10 {
		_, _ = w.Write([]byte("0123456789"))
	}
	// The raw last 16 bytes would hold part of the secret; redaction comes before the cut.
	_, _ = w.Write([]byte("x" + secret + "end\n"))
	got := w.tail(16, []string{secret})
	if got != "…23456789x***end" {
		t.Fatalf("tail = %q", got)
	}
}
