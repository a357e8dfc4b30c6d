package core

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A lockout or window longer than what is left of the int64 clock saturates:
// the key stays locked out, rather than getting a deadline that wrapped into
// the past (which reported Lockout once and then let the key through).
func TestLimiterLongLockoutDoesNotWrap(t *testing.T) {
	for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - time.Minute} {
		l, err := NewLimiter(LimiterConfig{Rate: 1, Burst: 1, MaxSoftViolations: 1, LockoutDuration: d, SoftViolationWindow: d, Clock: func() int64 { return 0 }})
		require.NoError(t, err)
		now := int64(time.Hour)
		require.True(t, l.TakeAt(1, now, 1).Allowed)
		require.Equal(t, Lockout, l.TakeAt(1, now, 1).Reason)
		_, locked := l.LockedOutAt(1, now+sec)
		assert.True(t, locked, "lockout %v", d)
		assert.Equal(t, Lockout, l.TakeAt(1, now+10*sec, 1).Reason, "lockout %v: a refilled bucket stays locked out", d)
	}
}

// The gate's strike lockout saturates the same way.
func TestGateLongStrikeLockoutDoesNotWrap(t *testing.T) {
	p := testPolicy()
	long := Duration(math.MaxInt64)
	p.Strikes.Lockout = &long
	p.Strikes.Weights = map[Reason]float64{Malformed: 100}
	g := mustGate(t, p)
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 7, 0)
	now := int64(time.Hour)
	v := g.Check(Message{Session: s, Kind: kMove, Size: 10, Flags: FlagMalformed}, now)
	require.Equal(t, Disconnect, v.Action)
	acct := g.lookup(s).acct.Load()
	assert.True(t, acct.lock.locked(now+sec), "the account is locked out")
	assert.Positive(t, acct.lock.remaining(now+sec))
}

// A lockout that runs to the end of the int64 clock, started at a now
// before 0 (the mark's deadline, rounded up to its microsecond, is then
// more than math.MaxInt64 after now): the decision that starts it says to
// retry after the lockout, not after the bucket's own wait.
func TestLimiterLongLockoutRetryAfterBeforeZero(t *testing.T) {
	l, err := NewLimiter(LimiterConfig{Rate: 1, Burst: 1, MaxSoftViolations: 1, LockoutDuration: math.MaxInt64, Clock: func() int64 { return 0 }})
	require.NoError(t, err)
	now := -int64(time.Hour)
	require.True(t, l.TakeAt(1, now, 1).Allowed)
	d := l.TakeAt(1, now, 1)
	require.Equal(t, Lockout, d.Reason)
	assert.Greater(t, d.RetryAfter, 100*365*24*time.Hour, "the decision that starts the lockout: %v", d)
}
