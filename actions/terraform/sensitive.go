package terraform

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// sensitiveFile marks the spec's secret variables sensitive, for one call: Terraform then
// records them as sensitive in the state and shows "(sensitive value)" in plans, even when
// the module does not declare them so.
const sensitiveFile = "trueup_sensitive_override.tf.json"

// sealedMarker starts the value of an encrypted spec field that was not revealed (a preview's
// spec): internal/sealed's MarkerPrefix, which an action does not import.
const sealedMarker = "*** sops:"

// hclVariable finds the variable blocks of a .tf file; a module's variables are only needed
// to keep the override from declaring one the module lacks (Terraform refuses that).
var hclVariable = regexp.MustCompile(`(?m)^[ \t]*variable[ \t]+"?([A-Za-z_][A-Za-z0-9_-]*)"?[ \t]*\{`)

// moduleVariables are the names of the variables the root module in dir declares, in its
// .tf and .tf.json files.
func moduleVariables(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == overrideFile || name == sensitiveFile {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".tf"):
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			for _, m := range hclVariable.FindAllSubmatch(b, -1) {
				out[string(m[1])] = true
			}
		case strings.HasSuffix(name, ".tf.json"):
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return nil, err
			}
			var doc struct {
				Variable map[string]json.RawMessage `json:"variable"`
			}
			if json.Unmarshal(b, &doc) == nil {
				for v := range doc.Variable {
					out[v] = true
				}
			}
		}
	}
	return out, nil
}

// secretVariables are the spec's top-level fields, among declared, whose value holds one of
// secrets, an encrypted field's marker or a secretRef object, sorted.
func secretVariables(spec []byte, secrets []string, declared map[string]bool) []string {
	var m map[string]any
	if err := json.Unmarshal(spec, &m); err != nil {
		return nil
	}
	var out []string
	for name, v := range m {
		if declared[name] && holdsSecret(v, secrets) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func holdsSecret(v any, secrets []string) bool {
	switch v := v.(type) {
	case string:
		if strings.HasPrefix(v, sealedMarker) {
			return true
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(v, s) {
				return true
			}
		}
	case map[string]any:
		if _, ok := v["secretRef"]; ok {
			return true
		}
		for _, e := range v {
			if holdsSecret(e, secrets) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if holdsSecret(e, secrets) {
				return true
			}
		}
	}
	return false
}

// writeSensitive writes the override marking names sensitive in the working copy's root, or
// removes it when there are none.
func writeSensitive(root string, names []string) error {
	path := filepath.Join(root, sensitiveFile)
	if len(names) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	vars := map[string]any{}
	for _, n := range names {
		vars[n] = map[string]bool{"sensitive": true}
	}
	b, err := json.MarshalIndent(map[string]any{"variable": vars}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// planLine is a line of a plan that names a change without showing a value: a resource's
// header ("# aws_db_instance.main will be updated in-place"), a section's title, the summary.
var planLine = regexp.MustCompile(`^  # \S+( \(deposed object \S+\))? (will be|must be|has been|has changed|has moved|is tainted)\b` +
	`|^(Terraform will perform the following actions:|Note: Objects have changed outside of Terraform|Changes to Outputs:|No changes\.|Plan: )`)

// resourceOpen starts the body of a resource in a plan; its attributes follow, up to the
// line "    }". Inside it nothing is kept, not even a line that looks like a header (a heredoc
// value's).
var resourceOpen = regexp.MustCompile(`^[-+~<=/ ]{3} (resource|data) ".*\{$`)

// outputLine is a line of the "Changes to Outputs:" section: its sign and name are kept.
var outputLine = regexp.MustCompile(`^  ([-+~]|-/\+|\+/-) ([A-Za-z_][A-Za-z0-9_-]*)\b`)

// planText is the plan's output without any attribute value: the plan of a pull request's
// preview is shown in a comment that anyone who can read the pull request reads, and values
// come from the state too (what a reconcile put there from a revealed secret).
func planText(out string) string {
	var b bytes.Buffer
	outputs, body := false, false
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, " \r")
		switch {
		case body:
			body = l != "    }"
		case resourceOpen.MatchString(l):
			body = true
		case planLine.MatchString(l):
			outputs = l == "Changes to Outputs:"
			if b.Len() > 0 && (!strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "Plan: ")) {
				b.WriteByte('\n')
			}
			b.WriteString(l)
			b.WriteByte('\n')
		case outputs && outputLine.MatchString(l):
			m := outputLine.FindStringSubmatch(l)
			b.WriteString("  " + m[1] + " " + m[2] + "\n")
		case l != "" && !strings.HasPrefix(l, " "):
			outputs = false
		}
	}
	return strings.TrimSpace(b.String())
}
