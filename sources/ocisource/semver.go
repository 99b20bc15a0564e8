package ocisource

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// pickSemver returns the tag of the highest version in the range; tags that are not strict
// versions (major.minor.patch, an optional leading v) are ignored, as Flux's ParseVersion
// does, and prereleases match only a range that names one (Masterminds' rule, which Flux
// follows).
func pickSemver(rng string, tags []string) (string, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return "", fmt.Errorf("semver %q: %w", rng, err)
	}
	var best *semver.Version
	tag := ""
	for _, t := range tags {
		v, err := semver.StrictNewVersion(strings.TrimPrefix(t, "v"))
		if err != nil || !c.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) {
			best, tag = v, t
		}
	}
	if best == nil {
		return "", fmt.Errorf("no tag matches semver %q (%d tags)", rng, len(tags))
	}
	return tag, nil
}
