package atomicbucket

import (
	"sync/atomic"
)

// Bucket is a single token bucket: a Limit and one word. Make one with New
// or NewAt; the zero value is not usable. A Bucket is safe for concurrent
// use, and a take never allocates or locks.
type Bucket struct {
	Limit
	word atomic.Uint64
}

// New returns a full bucket of rate tokens per second and the given burst
// (0 means DefaultBurst(rate)), measured on the monotonic clock Nanotime.
func New(rate, burst float64) (*Bucket, error) {
	return NewAt(rate, burst, Nanotime())
}

// NewAt returns a bucket that is full at now, for a caller that passes its
// own clock to every take.
func NewAt(rate, burst float64, now int64) (*Bucket, error) {
	p, err := newParams(rate, burst, now)
	if err != nil {
		return nil, err
	}
	b := &Bucket{}
	b.Limit.p.Store(p)
	b.word.Store(b.FullWord(now))
	return b, nil
}

// TakeAt takes n tokens at now (see Limit.TakeAt).
func (b *Bucket) TakeAt(now int64, n uint64) Result { return b.Limit.TakeAt(&b.word, now, n) }

// Take takes n tokens now, on the monotonic clock.
func (b *Bucket) Take(n uint64) Result { return b.Limit.TakeAt(&b.word, Nanotime(), n) }

// AllowAt reports whether one token could be taken at now, and takes it.
func (b *Bucket) AllowAt(now int64) bool { return b.TakeAt(now, 1).OK() }

// Allow takes one token now, on the monotonic clock.
func (b *Bucket) Allow() bool { return b.Take(1).OK() }

// TokensAt returns the level at now in tokens, without changing it.
func (b *Bucket) TokensAt(now int64) float64 { return b.Limit.LevelAt(&b.word, now) }

// Tokens returns the level now, on the monotonic clock.
func (b *Bucket) Tokens() float64 { return b.TokensAt(Nanotime()) }

// ResetAt refills the bucket to its burst at now.
func (b *Bucket) ResetAt(now int64) { b.word.Store(b.FullWord(now)) }

// Word returns the raw state word, for tests and diagnostics.
func (b *Bucket) Word() uint64 { return b.word.Load() }
