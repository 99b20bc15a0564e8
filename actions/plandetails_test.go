package actions

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPlanDetails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		changes bool
		reply   string // the details, as JSON
		want    Plan   // Changes is set from changes
		err     string
	}{
		{name: "none", changes: true, reply: `{}`, want: Plan{}},
		{name: "all nulls are absent", changes: true, reply: `{"add": null, "hash": null}`, want: Plan{}},
		{name: "all counts", changes: true, reply: `{"add": 1, "change": 2, "destroy": 3, "replace": 4}`,
			want: Plan{Counted: true, Add: 1, Change: 2, Destroy: 3, Replace: 4}},
		{name: "one count makes Counted", changes: true, reply: `{"destroy": 1}`, want: Plan{Counted: true, Destroy: 1}},
		{name: "zero counts of no changes", reply: `{"add": 0, "change": 0, "destroy": 0, "replace": 0}`, want: Plan{Counted: true}},
		{name: "changes without counted changes (outputs only)", changes: true, reply: `{"add": 0}`, want: Plan{Counted: true}},
		{name: "hash", changes: true, reply: `{"hash": "sha256:0f3a"}`, want: Plan{Hash: "sha256:0f3a"}},
		{name: "empty hash leaves it to PlanHash", reply: `{"hash": ""}`, want: Plan{}},
		{name: "largest count", changes: true, reply: `{"add": 2147483647}`, want: Plan{Counted: true, Add: 2147483647}},
		{name: "negative", changes: true, reply: `{"destroy": -1}`, err: `"destroy": want a non-negative integer up to 2147483647, got a negative number`},
		{name: "fraction", changes: true, reply: `{"change": 1.5}`, err: `"change": want a non-negative integer up to 2147483647, got a number not written as an integer`},
		{name: "exponent", changes: true, reply: `{"add": 1e3}`, err: `"add": want a non-negative integer up to 2147483647, got a number not written as an integer`},
		{name: "too large", changes: true, reply: `{"replace": 2147483648}`, err: `"replace": want a non-negative integer up to 2147483647, got a larger number`},
		{name: "long number", changes: true, reply: `{"add": 123456789012345678901234567890}`,
			err: `"add": want a non-negative integer up to 2147483647, got a larger number`},
		{name: "negative zero", changes: true, reply: `{"add": -0}`, err: `"add": want a non-negative integer up to 2147483647, got a negative number`},
		{name: "string count not quoted", changes: true, reply: `{"add": "1"}`, err: `"add": want a non-negative integer, got a string`},
		{name: "boolean count", changes: true, reply: `{"destroy": true}`, err: `"destroy": want a non-negative integer, got a boolean`},
		{name: "no changes with counts", reply: `{"add": 0, "destroy": 2}`,
			err: `"changes" is false but the counts are not all 0 (add 0, change 0, destroy 2, replace 0)`},
		{name: "hash a number", changes: true, reply: `{"hash": 12}`, err: `"hash": want a string, got a number`},
		{name: "hash with a space", changes: true, reply: `{"hash": "ab cd"}`, err: `"hash": want printable ASCII characters without spaces (character 3 is not)`},
		{name: "hash with a newline", changes: true, reply: `{"hash": "ab\n"}`, err: `"hash": want printable ASCII characters without spaces (character 3 is not)`},
		{name: "hash not ASCII", changes: true, reply: `{"hash": "é"}`, err: `"hash": want printable ASCII characters without spaces (character 1 is not)`},
		{name: "hash too long", changes: true, reply: `{"hash": "` + strings.Repeat("a", MaxPlanHash+1) + `"}`, err: `"hash": 129 characters; want at most 128`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var d PlanDetails
			if err := json.Unmarshal([]byte(tc.reply), &d); err != nil {
				t.Fatal(err)
			}
			got := Plan{Changes: tc.changes}
			err := d.SetOn(&got, nil)
			tc.want.Changes = tc.changes
			switch {
			case tc.err != "" && (err == nil || err.Error() != tc.err):
				t.Fatalf("err = %v, want %q", err, tc.err)
			case tc.err == "" && (err != nil || got != tc.want):
				t.Fatalf("SetOn = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// A hash that the plugin's scrubber changes holds a secret: it is refused, naming the field
// and not the value, since the host publishes the hash as it is. Other hashes pass.
func TestPlanDetailsHashHoldingASecret(t *testing.T) {
	t.Parallel()
	scrub := Scrubber([]string{"s3cr3t/pw", "tok-0123"})
	for _, tc := range []struct{ hash, err string }{
		{"sha256:ab12", ""},
		{"plan-s3cr3t/pw", `"hash" holds a secret of the call`},
		{"tok-0123", `"hash" holds a secret of the call`},
		{"plan-s3cr3t%2Fpw", `"hash" holds a secret of the call`}, // URL-escaped
	} {
		got := Plan{Changes: true}
		err := PlanDetails{Hash: json.RawMessage(`"` + tc.hash + `"`)}.SetOn(&got, scrub)
		switch {
		case tc.err == "" && (err != nil || got.Hash != tc.hash):
			t.Errorf("SetOn(%q) = %+v, %v; want the hash kept", tc.hash, got, err)
		case tc.err != "" && (err == nil || err.Error() != tc.err || got.Hash != ""):
			t.Errorf("SetOn(%q) = %+v, %v; want the error %q", tc.hash, got, err, tc.err)
		}
	}
	if _, err := PlanFromOutputs(map[string]any{"changes": true, "hash": "x-tok-0123"}, scrub); err == nil ||
		err.Error() != `"hash" holds a secret of the call` {
		t.Errorf("PlanFromOutputs with a secret in the hash: err = %v", err)
	}
}
