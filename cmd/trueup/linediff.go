package main

import "github.com/trueup-dev/trueup/internal/specdiff"

// unifiedDiff and splitLines are internal/specdiff's, shared with pull-request previews.
func unifiedDiff(a, b []string, context int) []string { return specdiff.Unified(a, b, context) }

func splitLines(s string) []string { return specdiff.SplitLines(s) }
