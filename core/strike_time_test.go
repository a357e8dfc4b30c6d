package core

import (
	"math"
	"testing"
	"time"

	"github.com/sluicedev/sluice/internal/timesat"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A clock that reads before 0 is a clock like any other: a fresh address
// or account is not locked out, and a lockout started there lasts its
// duration.
func TestGateNowBeforeZeroIsNotLockedOut(t *testing.T) {
	now := -100 * sec
	g, err := NewGate(testPolicy(), now) // lockout 60s; 16 malformed frames reach the ceiling
	require.NoError(t, err)
	s, v := g.Open(addrA, now)
	require.True(t, v.OK(), "open: %v", v)
	require.True(t, g.Authenticate(s, 7, now).OK())
	require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10}, now).OK())
	for range 16 {
		g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, now)
	}
	v = g.Check(Message{Session: s, Kind: kMove, Size: 10}, now)
	assert.Equal(t, Lockout, v.Reason)
	assert.Equal(t, 60*time.Second, g.lookup(s).acct.Load().lock.remaining(now), "a lockout started before 0 lasts its duration")
	assert.Equal(t, uint64(1), g.Stats().Lockouts)
}

// A lockout too long to represent saturates: while it runs, its
// remaining time is positive even at a now before 0.
func TestLockRemainingSaturates(t *testing.T) {
	var l lockState
	assert.False(t, l.locked(-sec), "the zero lock is open at any now")
	assert.False(t, l.locked(math.MinInt64))
	require.True(t, l.lockUntil(timesat.Add(-sec, math.MaxInt64), -sec))
	assert.True(t, l.locked(-sec))
	assert.Equal(t, time.Duration(math.MaxInt64), l.remaining(-sec))
}
