package sim

import (
	"testing"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/stretchr/testify/require"
)

// TestSimConnsIsAMap checks the sim's connection table against a map: a
// client's latest connection in its slot, older ones and out-of-range
// clients in the map, in any order of puts and removes.
func TestSimConnsIsAMap(t *testing.T) {
	r := behave.NewRand(5)
	cs := conns{byClient: make([]*simConn, 4)}
	ref := map[drive.ConnID]*simConn{}
	for range 20_000 {
		id := drive.ConnID{Client: int32(r.Between(-1, 5)), Gen: uint32(r.Between(1, 4))}
		switch c := ref[id]; {
		case c == nil && r.Chance(0.6):
			c = &simConn{id: id}
			cs.put(c)
			ref[id] = c
		case c != nil && r.Chance(0.5):
			cs.remove(c)
			delete(ref, id)
		}
		for client := int32(-1); client <= 5; client++ {
			for gen := uint32(1); gen <= 4; gen++ {
				id := drive.ConnID{Client: client, Gen: gen}
				require.Same(t, ref[id], cs.get(id), "%v", id)
			}
		}
	}
}
