package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/status"
	"github.com/trueup-dev/trueup/internal/store"
)

// The dashboard's view helpers: everything that turns stored values into what a page shows,
// kept apart from the handlers so that links to forges and the URL checks are tested alone.

// phaseOrder is the order an on-call engineer reads phases in: trouble first.
var phaseOrder = []string{status.PhaseFailed, status.PhaseReconciling, status.PhasePending, status.PhaseDeleting, status.PhaseReady}

var phaseClasses = map[string]string{
	status.PhaseFailed: "failed", status.PhaseReconciling: "reconciling", status.PhasePending: "pending",
	status.PhaseDeleting: "deleting", status.PhaseReady: "ready",
}

// phaseClass is a CSS class for a phase; unknown phases share one, so stored text never
// becomes a class name.
func phaseClass(phase string) string {
	if c, ok := phaseClasses[phase]; ok {
		return c
	}
	return "unknown"
}

// phaseIcon is a glyph shown beside the phase's name (never instead of it).
func phaseIcon(phase string) string {
	switch phase {
	case status.PhaseReady:
		return "✓"
	case status.PhaseFailed:
		return "✕"
	case status.PhaseReconciling:
		return "↻"
	case status.PhasePending:
		return "○"
	case status.PhaseDeleting:
		return "⌫"
	}
	return "?"
}

// condClass is a CSS class for a condition: whether its status is good news depends on type.
func condClass(c status.Condition) string {
	good := c.Status == status.True
	switch c.Type {
	case status.Stalled, status.Reconciling:
		good = c.Status == status.False
	}
	switch {
	case c.Status == status.Unknown || c.Status == "":
		return "unknown"
	case good:
		return "ok"
	case c.Type == status.Reconciling:
		return "progress"
	default:
		return "bad"
	}
}

// resultClass is a CSS class for a history result.
func resultClass(result string) string {
	switch result {
	case "Succeeded", "InSync":
		return "ok"
	case "Failed", "Stalled", "Interrupted":
		return "bad"
	case "InProgress", "Drifted":
		return "progress"
	}
	return "unknown"
}

// resourcePath is the dashboard page of a resource.
func resourcePath(namespace, kind, name string) string {
	return "/resources/" + url.PathEscape(namespace) + "/" + url.PathEscape(kind) + "/" + url.PathEscape(name)
}

// sourcePath is the dashboard page of a source.
func sourcePath(name string) string { return "/sources/" + url.PathEscape(name) }

// watchKey identifies a resource in the page for the live updates (kind is case-insensitive).
func watchKey(namespace, kind, name string) string {
	return namespace + "/" + strings.ToLower(kind) + "/" + name
}

// listPath is the resources page filtered by the given query parameters (pairs of name, value;
// empty values are left out).
func listPath(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return "/resources"
	}
	return "/resources?" + v.Encode()
}

// externalURL returns raw when it is an absolute http(s) URL without credentials, else "":
// only such URLs ever become links.
func externalURL(raw string) string {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return ""
	}
	return u.String()
}

// forge is a repository on a Git host whose web pages have known addresses.
type forge struct {
	base   string // https://host/owner/repo
	gitlab bool   // GitLab puts pages under /-/
}

var (
	scpLike  = regexp.MustCompile(`^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9.-]+):([^/].*)$`)
	commitRe = regexp.MustCompile(`^[0-9a-f]{7,64}$`)
)

// forgeOf recognises github.com and gitlab.com in any URL form (https, ssh, scp-like) and
// any other https URL ending in .git (GitLab-style pages when the host names GitLab,
// GitHub-style otherwise, as Gitea, Forgejo and GitHub Enterprise use).
func forgeOf(repoURL string) (forge, bool) {
	var host, path string
	var https bool
	if m := scpLike.FindStringSubmatch(repoURL); m != nil && !strings.Contains(repoURL, "://") {
		host, path = m[1], m[2]
	} else {
		u, err := url.Parse(repoURL)
		if err != nil || u.Host == "" {
			return forge{}, false
		}
		switch u.Scheme {
		case "https":
			https = true
		case "http", "ssh", "git":
		default:
			return forge{}, false
		}
		host, path = u.Hostname(), u.Path
		if https && u.Port() != "" {
			host = u.Host
		}
	}
	host = strings.ToLower(host)
	path = strings.Trim(path, "/")
	dotGit := strings.HasSuffix(path, ".git")
	path = strings.TrimSuffix(path, ".git")
	if path == "" || strings.Contains(path, "..") {
		return forge{}, false
	}
	switch strings.TrimPrefix(host, "www.") {
	case "github.com":
		return forge{base: "https://github.com/" + escapePath(path)}, true
	case "gitlab.com":
		return forge{base: "https://gitlab.com/" + escapePath(path), gitlab: true}, true
	}
	if !https || !dotGit {
		return forge{}, false
	}
	return forge{base: "https://" + host + "/" + escapePath(path), gitlab: strings.Contains(host, "gitlab")}, true
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func (f forge) commitURL(rev string) string {
	if !commitRe.MatchString(rev) {
		return ""
	}
	if f.gitlab {
		return f.base + "/-/commit/" + rev
	}
	return f.base + "/commit/" + rev
}

func (f forge) fileURL(rev, file string, line int) string {
	if !commitRe.MatchString(rev) || file == "" || strings.Contains(file, "..") {
		return ""
	}
	u := f.base + "/blob/" + rev + "/" + escapePath(strings.TrimPrefix(file, "/"))
	if f.gitlab {
		u = f.base + "/-/blob/" + rev + "/" + escapePath(strings.TrimPrefix(file, "/"))
	}
	if line > 0 {
		u += fmt.Sprintf("#L%d", line)
	}
	return u
}

// revision is a commit as a page shows it: short, and a link when the forge is known.
type revision struct {
	Full, Short, URL string
}

func makeRevision(repoURL, rev string) revision {
	r := revision{Full: rev, Short: shortSHA(rev)}
	if f, ok := forgeOf(repoURL); ok {
		r.URL = f.commitURL(rev)
	}
	return r
}

func shortSHA(rev string) string {
	if strings.HasPrefix(rev, "sha256:") {
		return clip.Rev(rev)
	}
	if commitRe.MatchString(rev) && len(rev) > 10 {
		return rev[:10]
	}
	if len(rev) > 16 {
		return rev[:16] + "…"
	}
	return rev
}

// fileLink is a manifest file and line, linked to the forge at a revision when known.
func fileLink(repoURL, rev, file string, line int) string {
	if f, ok := forgeOf(repoURL); ok {
		return f.fileURL(rev, file, line)
	}
	return ""
}

// displayURL drops credentials from a repository URL before a page shows it.
func displayURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw // a path or scp-like user@host:path, which has no password
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	return u.String()
}

// relTime says how long ago t was, as an engineer reads it at a glance.
func relTime(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	default:
		s = fmt.Sprintf("%d days", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// duration formats a run's duration briefly.
func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
}

const maxPrettyJSON = 256 << 10

// prettyJSON indents a JSON document for a <pre>; a huge one is cut.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	if b.Len() > maxPrettyJSON {
		return b.String()[:maxPrettyJSON] + "\n… (cut: see the API for the whole document)"
	}
	return b.String()
}

// output is one entry of a resource's outputs.
type output struct {
	Key   string
	Value string // strings as they are, anything else as JSON
	URL   string // set when Value is a safe http(s) URL
	Multi bool   // Value spans lines
}

// outputsOf lists an outputs object by key; anything that is not an object is one entry.
func outputsOf(raw json.RawMessage) []output {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return []output{{Key: "(value)", Value: prettyJSON(raw), Multi: true}}
	}
	out := make([]output, 0, len(m))
	for k, v := range m {
		o := output{Key: k}
		var s string
		if json.Unmarshal(v, &s) == nil {
			o.Value, o.URL = s, externalURL(s)
		} else {
			o.Value = prettyJSON(v)
		}
		o.Multi = strings.Contains(o.Value, "\n")
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// runURL finds the link to an external run (a workflow run, a pipeline) in outputs.
func runURL(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range []string{"runURL", "webURL", "url"} {
		var s string
		if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil {
			if u := externalURL(s); u != "" {
				return u
			}
		}
	}
	return ""
}

// pair is one label or annotation.
type pair struct{ Key, Value, Link string }

func pairsOf(m map[string]string, link bool) []pair {
	out := make([]pair, 0, len(m))
	for k, v := range m {
		p := pair{Key: k, Value: v}
		if link {
			p.Link = listPath("label", k+"="+v)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// firstLine returns the first line of s, cut to n runes.
func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = strings.TrimSpace(s[:i]), true
	}
	if r := []rune(s); len(r) > n {
		s, cut = string(r[:n]), true
	}
	if cut {
		s += "…"
	}
	return s
}

// configState names what a replica's config error says (cmd/trueup replicaConfigs writes
// it): blocks of the file waiting for a restart, a reload applied in part (its hash loaded
// with the errors, at one time), or a refused reload (the hash still the older one's).
func configState(c store.ReplicaConfig) string {
	switch {
	case c.Error == "":
		return ""
	case strings.HasPrefix(c.Error, "restart required:"):
		return "restart required"
	case !c.LoadedAt.IsZero() && c.LoadedAt.Equal(c.ErrorAt):
		return "applied in part"
	}
	return "reload refused"
}
