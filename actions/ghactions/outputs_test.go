package ghactions

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/actions"
)

func TestOutputsArtifact(t *testing.T) {
	t.Parallel()
	f := newFakeGitHub(t)
	f.shapeRun = func(r *fakeRun) {
		r.Outputs = []byte(`{"endpoint":"db.internal","port":5432,"big":12345678901234567890,"runURL":"https://example.com/mine"}`)
	}
	a, _ := newAction(t, f, f.config(nil), t.TempDir())
	res := mustDrive(t, newResource("outs", `{}`), a.Reconcile)
	out := res.Outputs
	if out["endpoint"] != "db.internal" || out["port"] != json.Number("5432") {
		t.Errorf("outputs = %v", out)
	}
	if out["big"] != json.Number("12345678901234567890") {
		t.Errorf("big = %v; want the exact digits", out["big"])
	}
	if out["runURL"] != "https://example.com/mine" {
		t.Errorf("runURL = %v; the artifact's keys must win", out["runURL"])
	}
	f.mu.Lock()
	blobAuth := f.blobAuth
	f.mu.Unlock()
	if blobAuth != 0 {
		t.Errorf("%d artifact blob downloads carried the API token", blobAuth)
	}
}

func TestOutputsArtifactInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		zip  func(t *testing.T) []byte
		want string
	}{
		{"array", func(t *testing.T) []byte { return zipOf(t, map[string][]byte{"outputs.json": []byte(`[1,2]`)}) }, "want a JSON object"},
		{"too large", func(t *testing.T) []byte {
			return zipOf(t, map[string][]byte{"outputs.json": []byte(`{"x":"` + strings.Repeat("a", maxOutputsBytes) + `"}`)})
		}, "too large"},
		{"not a zip", func(*testing.T) []byte { return []byte("PK nonsense") }, "not a zip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeGitHub(t)
			z := tc.zip(t)
			f.shapeRun = func(r *fakeRun) { r.OutputsZip = z }
			a, _ := newAction(t, f, f.config(nil), t.TempDir())
			_, err := drive(t, newResource("bad", `{}`), a.Reconcile)
			if !actions.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), outputsArtifact) {
				t.Fatalf("err = %v; want a terminal error about %s mentioning %q", err, outputsArtifact, tc.want)
			}
		})
	}
}

func TestReadOutputsZip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  string // JSON of the result, or the error substring after "error: "
	}{
		{"single file any name", map[string][]byte{"result.json": []byte(`{"a":1}`)}, `{"a":1}`},
		{"outputs.json among others", map[string][]byte{"outputs.json": []byte(`{"b":"x"}`), "log.txt": []byte("hi")}, `{"b":"x"}`},
		{"nested outputs.json", map[string][]byte{"dir/outputs.json": []byte(`{"c":true}`), "dir/x": []byte("y")}, `{"c":true}`},
		{"several without outputs.json", map[string][]byte{"a.json": []byte(`{}`), "b.json": []byte(`{}`)}, "error: found 2 files"},
		{"empty", map[string][]byte{}, "error: found 0 files"},
		{"invalid JSON", map[string][]byte{"outputs.json": []byte(`{"a":`)}, "error: invalid JSON"},
		{"trailing data", map[string][]byte{"outputs.json": []byte(`{"a":1} {"b":2}`)}, "error: trailing data"},
		{"null", map[string][]byte{"outputs.json": []byte(`null`)}, "error: want a JSON object, got null"},
	} {
		got, err := readOutputsZip(zipOf(t, tc.files))
		if want, isErr := strings.CutPrefix(tc.want, "error: "); isErr {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		b, _ := json.Marshal(got)
		if string(b) != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, b, tc.want)
		}
	}
}
