package behave

import (
	"testing"
	"time"
	"unsafe"

	"github.com/sluicedev/sluice/loadgen/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// PacedReset sends exactly its burst after every connect, one connect
// every Every (±10%), on the same account.
func TestPacedResetSendsTheBurstThenReconnects(t *testing.T) {
	acts := actionsOf(t, planOf(1, 5*time.Second, &PacedReset{}, 1))[0]
	var connects []Action
	for _, a := range acts {
		if a.Op == OpConnect {
			assert.Zero(t, a.Account, "the client's own account")
			connects = append(connects, a)
		}
	}
	bursts := filter(acts, sends(KindChat))
	require.Greater(t, len(connects), 30)
	assert.Equal(t, len(connects), len(bursts), "one burst per connect, the first with the first connect")
	for _, b := range bursts {
		assert.Equal(t, 5, b.Count)
	}
	for i := 1; i < len(connects); i++ {
		gap := connects[i].At - connects[i-1].At
		assert.InDelta(t, float64(125*time.Millisecond), float64(gap), float64(13*time.Millisecond))
	}
}

// MalformedChurn logs in under a fresh account each time, each followed by
// its malformed frames in one write, and with Addresses cycles over that
// many address groups of its own.
func TestMalformedChurnUsesFreshAccountsAndItsAddresses(t *testing.T) {
	acts := actionsOf(t, planOf(1, 2*time.Second, &MalformedChurn{Addresses: 7}, 2))
	seen := map[uint64]bool{}
	addrs := map[uint32]bool{}
	for ci, c := range acts {
		for i, a := range c {
			if a.Op != OpConnect || a.Account == 0 {
				continue
			}
			assert.False(t, seen[a.Account], "account %x reused", a.Account)
			assert.NotZero(t, a.Account>>63)
			seen[a.Account] = true
			assert.GreaterOrEqual(t, a.Addr, uint32(churnAddrBase), "none of a plan's groups")
			assert.Equal(t, ChurnAddr(ci, 7, uint64(len(addrsOf(c[:i+1])))), a.Addr)
			addrs[a.Addr] = true
			require.Less(t, i+1, len(c))
			raw := c[i+1]
			require.Equal(t, OpRaw, raw.Op)
			frames := 0
			for b := raw.Data; len(b) > 0; frames++ {
				require.GreaterOrEqual(t, len(b), wire.HeaderSize)
				n := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3])
				b = b[4+n:]
			}
			assert.Equal(t, 4, frames)
		}
	}
	assert.Greater(t, len(seen), 100)
	assert.Len(t, addrs, 14, "7 addresses for each of 2 clients")
}

func addrsOf(acts []Action) []Action {
	return filter(acts, func(a Action) bool { return a.Op == OpConnect && a.Account != 0 })
}

// An Action still fills one cache line with its Addr.
func TestActionFitsACacheLine(t *testing.T) {
	assert.Equal(t, uintptr(64), unsafe.Sizeof(Action{}))
}
