package execaction

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/actions/actiontest"
)

// FuzzParseReply parses arbitrary command stdout. It must not panic; an accepted reply has
// a non-negative requeue, a valid JSON state, conditions with a type and a known status and
// outputs that encode; a rejection's message stays short of echoing a long stdout, which
// may hold secrets.
func FuzzParseReply(f *testing.F) {
	for _, s := range []string{
		``,
		"  \n",
		`{}`,
		`{"done":true,"outputs":{"id":12345678901234567890,"url":"https://x"},"state":{"v":1},"message":"ok"}`,
		`{"done":false,"requeueAfter":"30s","state":null}`,
		`{"requeueAfter":"-1s"}`,
		`{"requeueAfter":"forever"}`,
		`{"inSync":false,"conditions":[{"type":"Ready","status":"True","reason":"Up","message":"fine"}]}`,
		`{"conditions":[{"type":"","status":"True"}]}`,
		`{"conditions":[{"type":"Ready","status":"maybe"}]}`,
		`{} {}`,
		`{"outputs":[1]}`,
		`starting...` + "\n" + `{"done":true}`,
		`{"done":"yes"}`,
		`{"state":{"a":[1,2,{"b":null}]},"unknown":1}`,
		`{"message":"` + strings.Repeat("\xff", 16) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		r, err := parseReply(stdout)
		if err != nil {
			checkStdoutError(t, err, stdout)
			return
		}
		if r.requeueAfter < 0 {
			t.Fatalf("negative requeue %v", r.requeueAfter)
		}
		if r.keepState && r.state != nil {
			t.Fatalf("state kept and replaced: %s", r.state)
		}
		if r.state != nil && !json.Valid(r.state) {
			t.Fatalf("state is not valid JSON: %q", r.state)
		}
		// The state is stdout's own bytes; an invalid byte in the message becomes U+FFFD.
		if len(r.state) > len(stdout) || len(r.message) > 3*len(stdout) {
			t.Fatalf("reply of %d+%d bytes from %d bytes of stdout", len(r.state), len(r.message), len(stdout))
		}
		for _, c := range r.conditions {
			if c.Type == "" || (c.Status != "True" && c.Status != "False" && c.Status != "Unknown") {
				t.Fatalf("bad condition accepted: %+v", c)
			}
		}
		if _, err := json.Marshal(r.outputs); err != nil {
			t.Fatalf("outputs do not encode: %v", err)
		}
		if !utf8.ValidString(r.message) {
			t.Fatalf("message is not UTF-8: %q", r.message)
		}
	})
}

// FuzzOutputCapture feeds arbitrary writes to the stdout and stderr collectors. What they
// keep stays bounded whatever the command writes: stdout keeps at most max bytes and
// reports the overflow; stderr's buffer stays under twice what it keeps, and its tail is
// valid UTF-8, at most size bytes plus the "…" mark (an invalid byte may grow to U+FFFD),
// and free of every secret.
func FuzzOutputCapture(f *testing.F) {
	f.Add([]byte("{\"done\":true}\n"), uint16(8), uint8(3), "tok3n")
	f.Add([]byte("error: password=hunter22 rejected\n\xff\xfe"), uint16(4), uint8(7), "hunter22")
	f.Add([]byte("ééééééééé"), uint16(1), uint8(5), "ab")
	f.Add([]byte{}, uint16(0), uint8(0), "")
	f.Fuzz(func(t *testing.T, data []byte, maxOut uint16, chunks uint8, secret string) {
		limit := int(maxOut % 512)
		keep := limit + len(secret)
		out := &capWriter{max: limit}
		errw := &tailWriter{keep: keep}
		n := int(chunks%16) + 1
		for i := 0; i < n; i++ {
			part := data[i*len(data)/n : (i+1)*len(data)/n]
			if w, err := out.Write(part); w != len(part) || err != nil {
				t.Fatalf("stdout write: %d of %d, %v", w, len(part), err)
			}
			if w, err := errw.Write(part); w != len(part) || err != nil {
				t.Fatalf("stderr write: %d of %d, %v", w, len(part), err)
			}
			if len(errw.buf) > 2*keep+len(part) {
				t.Fatalf("stderr buffer %d bytes, keeping %d", len(errw.buf), keep)
			}
		}
		b, overflow := out.bytes()
		if len(b) > limit || overflow != (len(data) > limit) || !bytes.Equal(b, data[:len(b)]) {
			t.Fatalf("stdout kept %d of %d bytes (max %d), overflow %v", len(b), len(data), limit, overflow)
		}
		// A secret is text (its invalid bytes could only match a tail's U+FFFD by chance).
		var secrets []string
		if len(secret) >= 4 && !strings.Contains(secret, "*") && utf8.ValidString(secret) {
			secrets = []string{secret}
		}
		tail := errw.tail(limit, secrets)
		if !utf8.ValidString(tail) {
			t.Fatalf("tail is not UTF-8: %q", tail)
		}
		if len(tail) > 3*limit+len("…") {
			t.Fatalf("tail of %d bytes for size %d", len(tail), limit)
		}
		for _, s := range secrets {
			if strings.Contains(tail, s) {
				t.Fatalf("tail %q holds the secret %q", tail, s)
			}
		}
	})
}

// FuzzParsePlan parses arbitrary plan stdout. It must not panic; an accepted plan came from
// one JSON document no shorter than a third of its texts (an invalid byte
// decodes to U+FFFD), with counts from 0 to MaxInt32 that are all 0
// without changes or counting, and a bounded hash of printable ASCII without spaces; a
// rejection's message does not echo stdout.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{
		``,
		`{}`,
		`{"done":true}`,
		`{"changes":true,"summary":"1 to add, 0 to change","plan":"+ db"}`,
		`{"changes":false}`,
		`{"changes":"yes"}`,
		`{"changes":true} {"changes":false}`,
		`plan: 1 to add`,
		`{"changes":true,"add":1,"change":0,"destroy":2,"replace":0,"hash":"sha256:ab"}`,
		`{"changes":false,"destroy":1}`,
		`{"changes":true,"add":-1,"hash":" "}`,
		// Each invalid byte in a JSON string decodes to U+FFFD, three bytes.
		`{"changes":true,"summary":"` + strings.Repeat("\xff", 16) + `"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		p, err := parsePlan(stdout, nil)
		if err != nil {
			checkStdoutError(t, err, stdout)
			return
		}
		if !json.Valid(bytes.TrimSpace(stdout)) {
			t.Fatalf("accepted a plan from stdout that is not one JSON document: %q", stdout)
		}
		// An invalid byte becomes U+FFFD (three bytes); nothing else grows in decoding.
		if len(p.Summary) > 3*len(stdout) || len(p.Text) > 3*len(stdout) {
			t.Fatalf("plan of %d+%d bytes from %d bytes of stdout", len(p.Summary), len(p.Text), len(stdout))
		}
		actiontest.CheckPlan(t, p)
	})
}

// checkStdoutError checks a refusal of a command's stdout: it says where the fault is and
// does not echo a long stdout back (a command may print secrets).
func checkStdoutError(t *testing.T, err error, stdout []byte) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "stdout: ") {
		t.Fatalf("error without the stdout: prefix: %q", msg)
	}
	if b := bytes.TrimSpace(stdout); len(b) > 64 && strings.Contains(msg, string(b)) {
		t.Fatalf("error echoes stdout: %q", msg)
	}
}
