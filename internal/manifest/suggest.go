package manifest

import (
	"slices"
	"strings"
)

// suggest returns the candidates a mistyped word most likely meant, none when none is close:
// one equal to it but for case, else the ones fewest single-letter edits away (ignoring
// case), up to two when several are equally close, in sorted order. A candidate counts as
// close within a third of the word's length, at least one edit, and fewer edits than either
// has letters: a short word (Pod, Db) keeps too few of its letters after two edits to say
// what was meant (Job, Dns).
func suggest(word string, candidates []string) []string {
	lower := strings.ToLower(word)
	sorted := slices.Sorted(slices.Values(candidates))
	for _, c := range sorted {
		if strings.ToLower(c) == lower {
			return []string{c}
		}
	}
	n := len([]rune(word))
	var best []string
	bestDist := 0
	for _, c := range sorted {
		d := editDistance(lower, strings.ToLower(c))
		if d > max(1, n/3) || d >= n || d >= len([]rune(c)) {
			continue
		}
		switch {
		case best == nil || d < bestDist:
			best, bestDist = []string{c}, d
		case d == bestDist && len(best) < 2:
			best = append(best, c)
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
