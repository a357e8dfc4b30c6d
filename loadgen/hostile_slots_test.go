package loadgen

import (
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSparseIDsAreDistinctAndSpread(t *testing.T) {
	seen := map[uint64]bool{}
	lowBits := map[uint64]int{}
	for n := uint64(1); n <= 100_000; n++ {
		id := drive.SparseID(n)
		require.NotZero(t, id)
		require.False(t, seen[id], "id %d repeats", id)
		seen[id] = true
		lowBits[id&63]++
	}
	assert.Len(t, lowBits, 64, "the low bits take every value")
}

// A population with SameAddressAs dials from the first address of the
// population it names; naming a later or unknown one is refused.
func TestSameAddressAs(t *testing.T) {
	p := &behave.Plan{Seed: 1, Duration: time.Second, Populations: []behave.Population{
		{Name: "crowd", Clients: 4, Behaviour: &behave.Honest{}, PerAddress: 2},
		{Name: "other", Clients: 2, Behaviour: &behave.Honest{}},
		{Name: "churn", Clients: 3, Behaviour: &behave.NATChurn{}, SameAddressAs: "crowd"},
		{Name: "after", Clients: 1, Behaviour: &behave.Honest{}},
	}}
	require.NoError(t, p.Validate())
	var addrs []uint32
	for _, c := range p.Clients() {
		addrs = append(addrs, c.Addr)
	}
	assert.Equal(t, []uint32{1, 1, 2, 2, 3, 4, 1, 1, 1, 5}, addrs)
	p.Populations[2].SameAddressAs = "after"
	assert.ErrorIs(t, p.Validate(), behave.ErrParam)
}

// In the sim a half-closing client gets the answers to the requests it
// sent before the close, and its connection's end is not a disconnect;
// sparse ids are all accepted.
func TestSimHalfCloseAndSparseIDs(t *testing.T) {
	plan := behave.Plan{Seed: 3, Duration: 6 * time.Second, Populations: []behave.Population{
		{Name: "halfclose", Clients: 4, Behaviour: &behave.HalfClose{Every: time.Second, Requests: 3}},
		{Name: "sparse", Clients: 4, Behaviour: &behave.SparseIDs{Honest: behave.Honest{ChatEvery: 300 * time.Millisecond}}},
	}}
	res := runSim(t, RunSpec{Plan: plan, Config: drive.RunConfig{Timeout: 500 * time.Millisecond}}, behave.DefaultPolicy())
	rec := res.Recorder
	assert.Positive(t, rec.Count(0, behave.KindChat, record.Accepted))
	assert.Zero(t, rec.Count(0, behave.KindChat, record.Disconnected), "every chat before a half-close answered")
	assert.Zero(t, res.Disconnected[0])
	assert.Positive(t, rec.Count(1, behave.KindChat, record.Accepted))
	assert.Zero(t, rec.TotalDropped())
}
