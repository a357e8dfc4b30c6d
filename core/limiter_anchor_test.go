package core

import (
	"testing"
	"time"
)

// A take at a now before the limiter's clock reading at NewLimiter (here
// 0) escalates as it would at any other now: the lockout lasts
// LockoutDuration and the soft-violation window SoftViolationWindow (each
// deadline rounded up to its mark's microsecond), not until that reading.
func TestLimiterEscalationBeforeTheClockReading(t *testing.T) {
	for _, base := range []int64{-100 * lsec, -100 * 365 * 24 * 3600 * lsec} {
		l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxSoftViolations: 2, SoftViolationWindow: time.Second, LockoutDuration: 30 * time.Second})
		if d := l.TakeAt(1, base, 1); !d.Allowed {
			t.Fatalf("base %d: first take %v", base, d)
		}
		if d := l.TakeAt(1, base+1, 1); d.Reason != AccountLimit {
			t.Fatalf("base %d: first violation %v", base, d)
		}
		d := l.TakeAt(1, base+2, 1)
		if d.Reason != Lockout || d.RetryAfter < 30*time.Second || d.RetryAfter >= 30*time.Second+time.Microsecond {
			t.Errorf("base %d: the lockout's decision %v, want Lockout for 30s", base, d)
		}
		if rest, ok := l.LockedOutAt(1, base+2+30*lsec+1000); ok {
			t.Errorf("base %d: still locked out %v after the lockout", base, rest)
		}

		// A window that opened at base has closed a second later: the
		// next violation is the first of a new window, not a lockout.
		w := newLimiter(t, LimiterConfig{Rate: 1e-3, Burst: 1, MaxSoftViolations: 2, SoftViolationWindow: time.Second})
		w.TakeAt(1, base, 1)
		if d := w.TakeAt(1, base+1, 1); d.Reason != AccountLimit {
			t.Fatalf("base %d: first violation %v", base, d)
		}
		if d := w.TakeAt(1, base+2*lsec, 1); d.Reason != AccountLimit {
			t.Errorf("base %d: a violation after the window closed: %v, want AccountLimit", base, d)
		}
	}
}
