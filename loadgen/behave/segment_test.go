package behave

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The N segments of a plan hold every client of the whole plan exactly
// once, each with everything it has there (index, seed, account, address
// group, window and arrival, Poisson arrivals included), for N = 1 to 5.
func TestSegmentsPartitionThePlan(t *testing.T) {
	whole := Plan{Seed: 9, Duration: 10 * time.Second, Populations: []Population{
		{Name: "crowd", Clients: 23, PerAddress: 4, PerAccount: 2, Behaviour: &Honest{}, Arrival: Arrival{Kind: ArrivalPoisson, Rate: 5}},
		{Name: "ramp", Clients: 7, Behaviour: &Honest{}, Arrival: Arrival{Kind: ArrivalRamp, Over: 3 * time.Second}, Start: time.Second},
		{Name: "flood", Clients: 2, Behaviour: &TinyFlood{}},
	}}
	require.NoError(t, whole.Validate())
	all := whole.Clients()
	for n := 1; n <= 5; n++ {
		seen := make([]int, len(all))
		for i := range n {
			p := whole
			p.Segment = Segment{Index: i, Of: n}
			require.NoError(t, p.Validate())
			for _, c := range p.Clients() {
				require.Less(t, c.Index, len(all))
				assert.Equal(t, all[c.Index], c, "segment %d/%d", i, n)
				assert.Equal(t, i, c.Index%n)
				seen[c.Index]++
			}
		}
		for idx, k := range seen {
			assert.Equal(t, 1, k, "client %d in %d segments of %d", idx, k, n)
		}
	}
	for _, bad := range []Segment{{Index: 3, Of: 3}, {Index: -1, Of: 2}, {Index: 1, Of: 0}, {Of: -2}} {
		p := whole
		p.Segment = bad
		var pe *ParamError
		assert.ErrorAs(t, p.Validate(), &pe, "%+v", bad)
	}
}
