package manifest

import (
	"slices"
	"strings"
)

// suggest returns the candidate a mistyped word most likely meant, "" when none is close:
// one equal to it but for case, else the one fewest single-letter edits away (ignoring case),
// within a third of the word's length (at least 2). Ties go to the first in sorted order, so
// the answer does not depend on the order of candidates.
func suggest(word string, candidates []string) string {
	lower := strings.ToLower(word)
	sorted := slices.Sorted(slices.Values(candidates))
	for _, c := range sorted {
		if strings.ToLower(c) == lower {
			return c
		}
	}
	best, bestDist := "", max(2, len([]rune(word))/3)+1
	for _, c := range sorted {
		if d := editDistance(lower, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in runes. Written here rather
// than imported: twenty lines against a dependency for one error message.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev, cur := make([]int, len(rb)+1), make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
