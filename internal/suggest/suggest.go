// Package suggest finds the known name a misspelt one was probably meant
// to be, for "did you mean" hints in configuration errors (scenario files,
// policy files). It is safe for concurrent use: it keeps no state.
package suggest

import "strings"

// Closest returns the name in known closest to name when it is close
// enough to be a misspelling (edit distance, ignoring case, at most a
// third of its length, and 2 at least), or "". Of equally close names the
// first in known wins: pass known sorted for a stable answer.
func Closest(name string, known []string) string {
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= max(2, len(name)/3) {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, with a swap of two
// neighbours counted as one edit.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			// A swap of two neighbours counts as one edit.
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev[j-1]) // approximate transposition
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
