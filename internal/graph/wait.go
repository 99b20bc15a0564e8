package graph

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Dep is one dependency of a resource as the store reads it: the edge (target and the
// output paths referenced) and the target's state.
type Dep struct {
	Target  ID
	Outputs []string // referenced output paths, dotted; empty for a plain dependsOn
	Exists  bool
	// Ready: the target is Ready at its current generation and not being deleted.
	Ready   bool
	Phase   string
	Message string
	Values  map[string]any // the target's outputs (read only when Outputs is not empty)
}

// IsReady is the readiness a dependent waits for: Ready at the current generation, and not
// being deleted.
func IsReady(phase string, generation, observed int64, deleting bool) bool {
	return phase == "Ready" && observed == generation && observed > 0 && !deleting
}

// maxNamed bounds how many dependencies a message names.
const maxNamed = 5

// Waiting names the dependencies that are not Ready, with why ("" when every one is):
// "waiting for Network/prod/core (not found), Database/prod/orders (Failed: quota exceeded)".
// Why is told only for dependencies in ns, the dependent's namespace: who may read the
// dependent may not read another namespace (an API scope), so a dependency there is only
// "not Ready", whether it exists or not.
func Waiting(ns string, deps []Dep) string {
	var parts []string
	n := 0
	for _, d := range deps {
		if d.Exists && d.Ready {
			continue
		}
		n++
		if len(parts) == maxNamed {
			continue
		}
		var why string
		switch {
		case d.Target.Namespace != ns:
			why = "not Ready"
		case !d.Exists:
			why = "not found"
		case d.Phase == "Deleting":
			why = "being deleted"
		case d.Message != "" && (d.Phase == "Failed" || d.Phase == "Stalled"):
			why = d.Phase + ": " + cut(d.Message, 160)
		default:
			why = d.Phase
		}
		parts = append(parts, d.Target.String()+" ("+why+")")
	}
	if n == 0 {
		return ""
	}
	s := "waiting for " + strings.Join(parts, ", ")
	if n > len(parts) {
		s += fmt.Sprintf(" and %d more", n-len(parts))
	}
	return s
}

// WaitingForDependents names the dependents a delete waits for: ids are (some of) those in
// the deleting resource's namespace, same how many there are, total how many in all.
// Dependents in other namespaces are counted, never named (see Waiting).
func WaitingForDependents(ids []ID, same, total int) string {
	if total == 0 {
		return ""
	}
	names := make([]string, 0, min(len(ids), maxNamed))
	for _, id := range ids[:min(len(ids), maxNamed)] {
		names = append(names, id.String())
	}
	var parts []string
	if len(names) > 0 {
		parts = append(parts, strings.Join(names, ", "))
	}
	if same > len(names) {
		parts = append(parts, fmt.Sprintf("%d more", same-len(names)))
	}
	if other := total - same; other > 0 {
		parts = append(parts, fmt.Sprintf("%d in other namespaces", other))
	}
	return "waiting for dependents to be deleted first: " + strings.Join(parts, " and ")
}

// Inputs is what a dependent's spec took from its dependencies: per dependency that it
// references, a hash of the referenced values (a missing value hashes as missing). Its
// encoding (Encode) is stored with the call; when a dependency's referenced outputs change,
// Changed names it and the dependent runs again.
type Inputs map[string]string

// InputsOf computes the inputs of deps; nil when no dependency is referenced.
func InputsOf(deps []Dep) Inputs {
	var in Inputs
	for _, d := range deps {
		if len(d.Outputs) == 0 {
			continue
		}
		if in == nil {
			in = Inputs{}
		}
		h := sha256.New()
		for _, p := range d.Outputs {
			h.Write([]byte(p))
			h.Write([]byte{0})
			v, ok := lookupPath(d.Values, strings.Split(p, "."))
			if !d.Exists || !ok {
				h.Write([]byte{1}) // missing
			} else {
				b, err := json.Marshal(v) // map keys sorted: equal values, equal bytes
				if err != nil {
					b = []byte(fmt.Sprint(v))
				}
				h.Write(b)
			}
			h.Write([]byte{0})
		}
		in[d.Target.String()] = hex.EncodeToString(h.Sum(nil))[:16]
	}
	return in
}

// Encode spells inputs for storage ("" for none).
func (in Inputs) Encode() string {
	if len(in) == 0 {
		return ""
	}
	b, _ := json.Marshal(map[string]string(in)) // keys sorted
	return string(b)
}

// DecodeInputs reads what Encode wrote; anything unreadable is empty inputs.
func DecodeInputs(s string) Inputs {
	var in Inputs
	if s != "" && json.Unmarshal([]byte(s), &in) != nil {
		return nil
	}
	return in
}

// Changed lists the dependencies (their keys, sorted) whose referenced values differ between
// what a dependent last ran with (stored) and now (current). A dependent that never ran with
// references (stored empty) has nothing to re-run: its first run takes the current values.
func Changed(stored, current Inputs) []string {
	if len(stored) == 0 {
		return nil
	}
	var out []string
	for k, v := range current {
		if stored[k] != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func lookupPath(m map[string]any, path []string) (any, bool) {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
