package terraform

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/trueup-dev/trueup/actions"
)

// maxIdent is PostgreSQL's identifier length (NAMEDATALEN-1).
const maxIdent = 63

var (
	unsafeSchema    = regexp.MustCompile(`[^a-z0-9_]+`)
	unsafeWorkspace = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// schemaName is the pg backend's schema of an instance: trueup_tf_<instance>, lowercased,
// with anything but letters, digits and underscores replaced, so that it needs no quoting.
// A name that had to be changed or cut gets a digest of the original, so that two instances
// never share a schema.
func schemaName(instance string) string {
	clean := unsafeSchema.ReplaceAllString(strings.ToLower(instance), "_")
	name := "trueup_tf_" + clean
	if clean != instance || len(name) > maxIdent {
		name = name[:min(len(name), maxIdent-9)] + "_" + digest(instance)
	}
	return name
}

// workspaceName is the Terraform workspace of a resource: <namespace>.<kind>.<name>, with
// anything outside [A-Za-z0-9._-] replaced and a digest added when something was, so that
// two resources never share a workspace.
func workspaceName(r actions.Resource) string {
	raw := r.Namespace + "." + r.Kind + "." + r.Name
	clean := unsafeWorkspace.ReplaceAllString(raw, "_")
	if clean != raw || len(clean) > 90 || r.Namespace == "" {
		clean = clean[:min(len(clean), 90)] + "-" + digest(raw)
	}
	return clean
}

// safeName is s as a file name.
func safeName(s string) string {
	clean := unsafeWorkspace.ReplaceAllString(s, "_")
	if clean == "" || clean == "." || clean == ".." || clean != s {
		return clean + "-" + digest(s)
	}
	return clean
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
