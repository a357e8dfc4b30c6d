// Package suggest finds the known name a misspelt one was probably meant
// to be, for "did you mean" hints in configuration errors (scenario files,
// policy files), and words the hint. It is safe for concurrent use: it
// keeps no state.
package suggest

import (
	"fmt"
	"strings"
)

// Closest returns the name in known closest to name when it is close
// enough to be a misspelling (edit distance, ignoring case, at most a
// third of its length, and 2 at least), or "". Of equally close names the
// first in known wins: pass known sorted for a stable answer.
func Closest(name string, known []string) string {
	lower := strings.ToLower(name)
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := editDistance(lower, strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= max(2, len(name)/3) {
		return best
	}
	return ""
}

// Hint is the end of a message that suggests s: ` (did you mean "s"?)`,
// or "" when s is "" (nothing close).
func Hint(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", s)
}

// editDistance is the optimal string alignment distance of a and b: the
// Levenshtein distance with a swap of two neighbours counted as one edit
// (a swapped pair is not edited again).
func editDistance(a, b string) int {
	// Three rows of the table: i−2, i−1 and i.
	pp := make([]int, len(b)+1)
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
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(b)]
}
