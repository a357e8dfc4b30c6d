package loadgen

import (
	"cmp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWorkerHeapOrder checks the worker's heap against a sort: clients come
// off it by (next.At, index), ties included, whatever the order of pushes,
// fixes of the root and pops.
func TestWorkerHeapOrder(t *testing.T) {
	r := NewRand(1)
	for _, n := range []int{1, 2, 3, 4, 5, 6, 17, 64, 229} {
		w := &Worker{clients: make([]clientState, n)}
		for i := range w.clients {
			w.clients[i].next.At = r.Between(0, 20) // many ties
			w.push(int32(i))
		}
		for step := 0; len(w.heap) > 0; step++ {
			// The root is the least (At, index).
			want := slices.MinFunc(w.heap, func(a, b heapEntry) int {
				return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.i, b.i))
			})
			require.Equal(t, want, w.heap[0], "n=%d step %d", n, step)
			for _, e := range w.heap {
				require.Equal(t, w.clients[e.i].next.At, e.at)
			}
			if r.Chance(0.7) {
				cs := &w.clients[w.heap[0].i]
				cs.next.At += r.Between(0, 30)
				w.fix()
			} else {
				w.pop()
			}
		}
	}
}
