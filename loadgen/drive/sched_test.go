package drive

import (
	"cmp"
	"testing"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/stretchr/testify/require"
)

// TestSchedOrder checks the worker's tournament tree against a scan: the
// winner is always the least (time, index) of the clients not gone, ties
// included, whatever the sizes, the changes of the winner's time and the
// removals.
func TestSchedOrder(t *testing.T) {
	r := behave.NewRand(1)
	for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 64, 229} {
		at := make([]int64, n)
		for c := range at {
			at[c] = r.Between(0, 20) // many ties
			if r.Chance(0.1) {
				at[c] = gone
			}
		}
		var s sched
		s.build(at)
		for step := 0; ; step++ {
			live := 0
			for _, t := range at {
				if t != gone {
					live++
				}
			}
			require.Equal(t, live, s.live, "n=%d step %d", n, step)
			if live == 0 {
				break
			}
			c := 0
			for d := range at {
				if cmp.Or(cmp.Compare(at[d], at[c]), cmp.Compare(d, c)) < 0 {
					c = d
				}
			}
			require.Equal(t, schedEntry{at[c], int32(c)}, s.tree[0], "n=%d step %d", n, step)
			if r.Chance(0.8) {
				at[c] += r.Between(0, 30)
				s.replace(at[c])
			} else {
				at[c] = gone
				s.live--
				s.replace(gone)
			}
		}
	}
	var empty sched
	empty.build(nil)
	require.Zero(t, empty.live)
}
