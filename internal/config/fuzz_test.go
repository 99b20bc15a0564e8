package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/envvar"
)

// fuzzSecret is what every ${VAR} expands to in FuzzParse: long enough to be scrubbed, and
// spelled so that no config text contains it by chance.
const fuzzSecret = "fzS3cr3t-v4lue"

// FuzzParse decodes arbitrary config text. It must not panic; an error must not quote a
// value that came from the environment (errors reach logs); an accepted config lists every
// such value among its secrets.
func FuzzParse(f *testing.F) {
	f.Add(fullExample)
	f.Add("sources: [{name: a, dir: {path: .}}]\n")
	f.Add("reconcile: {workers: \"${N}\"}\nsources: [{name: a, dir: {path: .}}]\n")
	f.Add("sources: [{name: a, git: {url: \"${URL}\"}}]\n")
	f.Add("sources: [{name: a, dir: {path: .}, prune: {maxFraction: 2}}]\nserver: {listen: \"${L}\"}\n")
	f.Add("a: &a [x]\nsources: *a\n")
	f.Add("unknown: 1\n")
	f.Add("")
	f.Add("---\n...\n")
	f.Fuzz(func(t *testing.T, data string) {
		if strings.Contains(data, fuzzSecret) {
			return
		}
		getenv := func(k string) string {
			if k == "TRUEUP_DATABASE_URL" {
				return ""
			}
			return fuzzSecret
		}
		c, err := Parse([]byte(data), "/etc/trueup", getenv)
		if err != nil {
			if strings.Contains(err.Error(), fuzzSecret) {
				t.Fatalf("error quotes a value from the environment: %v", err)
			}
			return
		}
		if strings.Contains(data, "${") && envvar.Ref.MatchString(data) && !slices.Contains(c.Secrets(), fuzzSecret) && usesExpansion(c) {
			t.Fatalf("an expanded value is not among the secrets %q", c.Secrets())
		}
	})
}

// usesExpansion reports whether the secret reached the decoded config somewhere a reader
// would see it (a ${VAR} in a comment or a key expands nothing).
func usesExpansion(c *Config) bool {
	return strings.Contains(strings.Join([]string{c.Database.URL, c.DataDir, c.Server.Listen}, " "), fuzzSecret) ||
		func() bool {
			for _, a := range c.Actions {
				if strings.Contains(string(a.Config), fuzzSecret) {
					return true
				}
			}
			return false
		}()
}
