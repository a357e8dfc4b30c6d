package core

import "github.com/sluicedev/sluice/shardmap"

// limiterKeyed runs one keyed layer of the gate (address, account or
// match) on the module's keyed Limiter over package shardmap: lock-free
// takes and refunds on tracked keys, a bounded table that evicts only full
// buckets, escalation from soft violations to lockout, and fail-open or
// fail-closed tables.
type limiterKeyed struct {
	l *Limiter
}

// newLimiterKeyed builds the Limiter of one layer. Its clock is anchored at
// now; the gate only ever calls its At methods.
func newLimiterKeyed(b *Budget, maxKeys int, esc *Escalation, reason Reason, now int64, seed uint64) (*limiterKeyed, error) {
	l, err := NewLimiter(limiterConfigFor(b, maxKeys, esc, reason, now, seed))
	if err != nil {
		return nil, err
	}
	return &limiterKeyed{l: l}, nil
}

// limiterConfigFor is the configuration of the Limiter of one layer, its
// clock anchored at now.
func limiterConfigFor(b *Budget, maxKeys int, esc *Escalation, reason Reason, now int64, seed uint64) LimiterConfig {
	var shards int
	if seed != 0 {
		// WithReproducibleTables: one layout whatever the machine, and a
		// seed of its own per layer.
		seed = layerSeed(seed, reason)
		shards = shardmap.ReproducibleShards(maxKeys)
	}
	return LimiterConfig{
		Shards:              shards,
		HashSeed:            seed,
		Rate:                *b.Rate,
		Burst:               *b.Burst,
		MaxKeys:             maxKeys,
		DenyReason:          reason,
		SoftViolationWindow: esc.Window.std(),
		MaxSoftViolations:   int(min(*esc.Violations, shardmap.MaxCount)),
		LockoutDuration:     esc.Lockout.std(),
		DisableEscalation:   *esc.Violations == 0,
		FailOpen:            esc.TableFull == "allow",
		Clock:               func() int64 { return now },
	}
}

// layerSeed is the hash seed of the layer that denies with reason, for the
// gate's seed: never 0, which would mean random secrets. Distinct seeds
// give distinct layer seeds but for one pair: the seed that the mix takes
// to 0 shares 1 with the one it takes to 1.
func layerSeed(seed uint64, reason Reason) uint64 {
	seed ^= uint64(reason) * 0x9e3779b97f4a7c15
	if seed == 0 {
		seed = 1
	}
	return seed
}

func (k *limiterKeyed) takeAt(key uint64, now int64, n uint64) keyedResult {
	d := k.l.TakeAt(key, now, n)
	if d.Allowed {
		return keyedResult{ok: true, reason: d.Reason} // Reason TableFull: passed untracked, nothing taken
	}
	r := keyedResult{retry: d.RetryAfter, reason: d.Reason}
	if r.reason == Oversize { // n above the burst: the layer can never pass it
		r.reason = k.l.cfg.DenyReason
	}
	return r
}

func (k *limiterKeyed) refundAt(key uint64, now int64, n uint64) { k.l.RefundAt(key, now, n) }

func (k *limiterKeyed) levelAt(key uint64, now int64) (float64, bool) {
	return k.l.m.LevelAt(key, now)
}

// sweep forgets idle full buckets, but only once the table is half full:
// the table is allocated at its bound, so below that forgetting frees
// nothing, and an insert into a full shard evicts idle buckets on demand
// anyway. Scanning a sparse 100,000-key table every second was most of
// the cost of a simulated run.
func (k *limiterKeyed) sweep(now int64) {
	if 2*k.l.Len() < k.l.Config().MaxKeys {
		return
	}
	k.l.SweepAt(now)
}

func (k *limiterKeyed) size() int { return k.l.Len() }
