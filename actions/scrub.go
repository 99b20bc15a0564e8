package actions

import "github.com/trueup-dev/trueup/internal/redact"

// The scrubbing plugins do of their own messages, through internal/redact: the host's
// registry of secrets (redact.Registry) and these functions know the same escapings.

// ScrubError returns err with scrub applied to its message, keeping err in the chain
// (redact.Error).
func ScrubError(err error, scrub func(string) string) error { return redact.Error(err, scrub) }

// Scrubber returns a function that replaces every secret, and its JSON- and URL-escaped
// forms, with "***", longest first (redact.Replacer).
func Scrubber(secrets []string) func(string) string { return redact.Replacer(secrets) }

// ScrubValue returns a decoded JSON value with every string, key and number that shows a
// secret scrubbed (redact.Value).
func ScrubValue(v any, scrub func(string) string, numbers *Numbers) any {
	return redact.Value(v, scrub, numbers)
}

// Numbers tells which JSON numbers show a secret (redact.Numbers).
type Numbers = redact.Numbers

// NewNumbers returns the check of JSON numbers against secrets, scrub being their scrubber
// (redact.NewNumbers).
func NewNumbers(scrub func(string) string, secrets []string) *Numbers {
	return redact.NewNumbers(scrub, secrets)
}

// Leaves appends the text of every leaf of v, a decoded JSON value (redact.Leaves).
func Leaves(out []string, v any) []string { return redact.Leaves(out, v) }
