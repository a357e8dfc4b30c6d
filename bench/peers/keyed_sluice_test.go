package peers

import (
	"testing"

	"github.com/sluicedev/sluice/core"
)

// ---- sluice: core.Limiter, a sharded open-addressing table of one-word
// buckets with escalation state (soft violations, lockout) beside each.

type sluiceKeyed struct {
	lim    *core.Limiter
	caller bool // TakeAt with the caller's now, or Take on the limiter's clock
}

func buildSluiceKeyed(caller bool) func(tb testing.TB, ks *keySet, c keyedConfig) keyedLimiter {
	return func(tb testing.TB, ks *keySet, c keyedConfig) keyedLimiter {
		lim, err := core.NewLimiter(core.LimiterConfig{Rate: c.rate, Burst: c.burst, MaxKeys: len(ks.u)})
		if err != nil {
			tb.Fatal(err)
		}
		return insertAll(tb, ks, &sluiceKeyed{lim: lim, caller: caller})
	}
}

func (s *sluiceKeyed) Take(_ int, key uint64, now int64) bool {
	if s.caller {
		return s.lim.TakeAt(key, now, 1).Allowed
	}
	return s.lim.Take(key, 1).Allowed
}

func (s *sluiceKeyed) Close() { _ = s.lim.Close() }

// ---- sluice-batch: the same core.Limiter, taken a batch at a time with
// TakeBatchAt and the caller's clock.

type sluiceBatch struct{ sluiceKeyed }

func buildSluiceBatch(tb testing.TB, ks *keySet, c keyedConfig) keyedLimiter {
	lim, err := core.NewLimiter(core.LimiterConfig{Rate: c.rate, Burst: c.burst, MaxKeys: len(ks.u)})
	if err != nil {
		tb.Fatal(err)
	}
	return insertAll(tb, ks, &sluiceBatch{sluiceKeyed: sluiceKeyed{lim: lim, caller: true}})
}

// Batcher returns a batcher with a Decision buffer of size.
func (s *sluiceBatch) Batcher(size int) batcher {
	return &sluiceBatcher{lim: s.lim, out: make([]core.Decision, size)}
}

// sluiceBatcher decides a batch into its own Decision buffer (the driver
// goroutine's) and counts the passes.
type sluiceBatcher struct {
	lim *core.Limiter
	out []core.Decision
}

func (s *sluiceBatcher) TakeBatch(keys []uint64, now int64) int {
	passed := 0
	for len(keys) > 0 {
		out := s.out[:min(len(keys), len(s.out))]
		s.lim.TakeBatchAt(keys[:len(out)], now, 1, out)
		for i := range out {
			if out[i].Allowed {
				passed++
			}
		}
		keys = keys[len(out):]
	}
	return passed
}
