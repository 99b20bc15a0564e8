package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxPlanHash bounds the length of a hash a backend reports with its plan (a SHA-512 in hex
// fits).
const MaxPlanHash = 128

// PlanDetails are the optional fields of a plan reply by which a backend reports what its
// plan would do and what identifies it: "add", "change", "destroy" and "replace" (counts,
// non-negative integers; any of them present makes the plan Counted, the others being 0)
// and "hash" (Plan.Hash). The exec protocol's plan reply, the http provisioner's answer to a
// plan and the trueup-outputs of a github-actions or gitlab plan run carry them; a reply
// struct embeds PlanDetails to decode them. null is the same as absent.
type PlanDetails struct {
	Add     json.RawMessage `json:"add"`
	Change  json.RawMessage `json:"change"`
	Destroy json.RawMessage `json:"destroy"`
	Replace json.RawMessage `json:"replace"`
	Hash    json.RawMessage `json:"hash"`
}

// SetOn checks the fields and sets them on p, whose Changes is already read. The error names
// the field and quotes none of the reply but checked counts. A plan of no changes whose counts are not all 0
// contradicts itself, and is refused rather than guessed at.
//
// scrub is the plugin's scrubber of the call's and the instance's secrets, the one it
// scrubs the plan's Summary and Text with (nil: no secrets). The hash is published as it is
// (the resource's planHash, its conditions and history), so a hash that scrub changes holds a
// secret and is refused rather than scrubbed: a scrubbed hash would no longer identify the
// plan the plugin keeps.
func (d PlanDetails) SetOn(p *Plan, scrub func(string) string) error {
	for _, c := range []struct {
		name string
		raw  json.RawMessage
		dst  *int
	}{{"add", d.Add, &p.Add}, {"change", d.Change, &p.Change}, {"destroy", d.Destroy, &p.Destroy}, {"replace", d.Replace, &p.Replace}} {
		if IsNull(c.raw) {
			continue
		}
		n, err := planCount(c.raw)
		if err != nil {
			return fmt.Errorf("%q: %w", c.name, err)
		}
		*c.dst = n
		p.Counted = true
	}
	if !p.Changes && p.Add+p.Change+p.Destroy+p.Replace > 0 {
		return fmt.Errorf(`"changes" is false but the counts are not all 0 (add %d, change %d, destroy %d, replace %d)`,
			p.Add, p.Change, p.Destroy, p.Replace)
	}
	if IsNull(d.Hash) {
		return nil
	}
	var h string
	if err := json.Unmarshal(d.Hash, &h); err != nil {
		return fmt.Errorf(`"hash": want a string, got %s`, jsonKind(d.Hash))
	}
	if len(h) > MaxPlanHash {
		return fmt.Errorf(`"hash": %d characters; want at most %d`, len(h), MaxPlanHash)
	}
	for i := 0; i < len(h); i++ {
		if h[i] <= ' ' || h[i] > '~' {
			return fmt.Errorf(`"hash": want printable ASCII characters without spaces (character %d is not)`, i+1)
		}
	}
	if scrub != nil && scrub(h) != h {
		return errors.New(`"hash" holds a secret of the call`)
	}
	p.Hash = h // "" leaves the hash to PlanHash
	return nil
}

// planCount reads a count: a JSON integer from 0 to MaxInt32. A refused number is named by
// its kind, never quoted: a reply may hold a secret anywhere.
func planCount(raw json.RawMessage) (int, error) {
	s := string(bytes.TrimSpace(raw))
	if jsonKind(raw) != "a number" {
		return 0, fmt.Errorf("want a non-negative integer, got %s", jsonKind(raw))
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err == nil && n <= math.MaxInt32 {
		return int(n), nil
	}
	kind := "a larger number"
	switch {
	case strings.HasPrefix(s, "-"):
		kind = "a negative number"
	case strings.ContainsAny(s, ".eE"):
		kind = "a number not written as an integer"
	}
	return 0, fmt.Errorf("want a non-negative integer up to %d, got %s", math.MaxInt32, kind)
}

// jsonKind names the kind of a JSON value, for errors that must not quote it.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// IsNull reports whether raw is empty or the JSON null (blanks around it aside): a field that
// is absent, or null, which plugins read alike.
func IsNull(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) == 0 || string(b) == "null"
}
