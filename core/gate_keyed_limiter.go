package core

// limiterKeyed runs a gate layer on the module's keyed Limiter (over
// package shardmap). The match layer, the last of the all-or-nothing group,
// never has to give tokens back and always uses it. The address and account
// layers come before the channel and match layers, so a later denial must
// return what they took: they use a Limiter only when it can refund (a
// RefundAt(key, now, n) method, which core.Limiter does not have yet), and
// the fallback store otherwise.
type limiterKeyed struct {
	l      *Limiter
	refund keyedRefunder // nil when the Limiter cannot refund
}

// keyedRefunder is the method the address and account layers need from a
// keyed limiter: return n tokens taken from key at the same now, never
// above the burst.
type keyedRefunder interface {
	RefundAt(key uint64, now int64, n uint64)
}

// newLimiterKeyed builds a Limiter for a budget. With needRefund it returns
// nil unless the Limiter can refund.
func newLimiterKeyed(b *Budget, maxKeys int, esc *Escalation, reason Reason, now int64, needRefund bool) *limiterKeyed {
	l, err := NewLimiter(LimiterConfig{
		Rate:                *b.Rate,
		Burst:               *b.Burst,
		MaxKeys:             maxKeys,
		DenyReason:          reason,
		SoftViolationWindow: Duration.std(*esc.Window),
		MaxSoftViolations:   int(*esc.Violations),
		LockoutDuration:     Duration.std(*esc.Lockout),
		DisableEscalation:   *esc.Violations == 0,
		FailOpen:            esc.TableFull == "allow",
		Clock:               func() int64 { return now }, // anchors the limiter at now; the gate only calls At methods
	})
	if err != nil {
		return nil
	}
	k := &limiterKeyed{l: l}
	k.refund, _ = any(l).(keyedRefunder)
	if needRefund && k.refund == nil {
		return nil
	}
	return k
}

func (k *limiterKeyed) takeAt(key uint64, now int64, n uint64) keyedResult {
	d := k.l.TakeAt(key, now, n)
	if d.Allowed {
		return keyedResult{ok: true, reason: d.Reason} // Reason TableFull: passed untracked, nothing taken
	}
	r := keyedResult{retry: d.RetryAfter, reason: d.Reason}
	if r.reason == Oversize { // n above the burst: the layer can never pass it
		r.reason = None
	}
	return r
}

func (k *limiterKeyed) refundAt(key uint64, now int64, n uint64) {
	if k.refund != nil {
		k.refund.RefundAt(key, now, n)
	}
}

func (k *limiterKeyed) levelAt(key uint64, now int64) (float64, bool) {
	return k.l.LevelAt(key, now), true
}

// ensure does nothing: a Limiter inserts on the first take (locking one
// shard once per key).
func (k *limiterKeyed) ensure(uint64, int64) {}

func (k *limiterKeyed) sweep(now int64) { k.l.SweepAt(now) }

func (k *limiterKeyed) size() int { return k.l.Len() }
