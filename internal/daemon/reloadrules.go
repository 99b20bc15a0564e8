package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/config"
)

// refuseRestartOnly refuses a config whose restart-only changes must not look applied: a
// changed auth block (a revoked token, a narrowed role, anonymous access turned off) keeps
// its running values until a restart, so applying the rest of the file would report a
// revocation that is not in effect.
func refuseRestartOnly(pending []string) error {
	if slices.Contains(pending, "auth") {
		return errors.New("auth changed: tokens, roles and sign-in are read only at start, so this reload would leave the old ones in effect; restart trueup to apply the file (nothing of it was applied)")
	}
	return nil
}

// scrubLines passes every line through scrub.
func scrubLines(scrub func(string) string, lines []string) []string {
	for i, l := range lines {
		lines[i] = scrub(l)
	}
	return lines
}

// planSources splits the running sources of a reload by what ch says of them: keep run on
// (unchanged, or only their webhook secret changed: the webhook handler takes it from the
// config published), stop end (removed, or changed: restart, whose new copy replaces them).
// The sources of the new config not kept are the ones a reload starts.
func planSources(running []string, ch config.Changes) (keep, stop, restart []string) {
	restart = slices.DeleteFunc(slices.Clone(ch.SourcesChanged), func(n string) bool { return slices.Contains(ch.WebhookOnly, n) })
	for _, name := range running {
		if !slices.Contains(ch.SourcesRemoved, name) && !slices.Contains(restart, name) {
			keep = append(keep, name)
		}
	}
	return keep, append(slices.Clone(ch.SourcesRemoved), restart...), restart
}

// moduleWarnings names the action instances of acts (built from cfg) that read a source cfg
// does not have (actions.SourceReader: a terraform module kept in a repository): their
// resources stall.
func moduleWarnings(cfg *config.Config, acts map[string]actions.Action) []string {
	var out []string
	for _, a := range cfg.Actions {
		r, ok := acts[a.Name].(actions.SourceReader)
		if !ok {
			continue
		}
		for _, src := range r.SourcesRead() {
			if !slices.ContainsFunc(cfg.Sources, func(s config.Source) bool { return s.Name == src }) {
				out = append(out, fmt.Sprintf("action %s reads its module from source %s, which this config does not have: its resources stall until the source is configured again", a.Name, src))
			}
		}
	}
	return out
}

// errorLines splits a (joined) error into its lines.
func errorLines(err error) []string {
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
