package core

import (
	"errors"
	"time"
)

// KeyedLayer is the extension point of the gate's keyed layers (account,
// address and match): a keyed token bucket the gate takes a message's cost
// from and, when a later layer of the same message denies, refunds. The
// gate runs each layer on a *Limiter built from the policy unless
// WithKeyedLayer gives it another implementation, such as package fleet's
// buckets shared by a fleet of servers.
//
// An implementation must be safe for concurrent use, and lock-free,
// allocation-free and free of I/O in TakeAt and RefundAt for keys it
// already tracks: the gate calls them on every message. Work that needs
// the network belongs on goroutines of the implementation's own, which its
// owner starts and stops. *Limiter implements KeyedLayer.
type KeyedLayer interface {
	// TakeAt takes n tokens from key's bucket at now (the gate's clock, in
	// nanoseconds). A key seen for the first time gets a full bucket. A
	// pass with reason TableFull took nothing (a key the layer could not
	// track, let through); a denial carries its reason (the layer's own,
	// TableFull, Lockout, Closed; Oversize for a cost the layer can never
	// pass, which the gate reports as the layer's reason) and RetryAfter.
	TakeAt(key uint64, now int64, n uint64) Decision
	// RefundAt gives back n tokens that TakeAt took at the same now.
	RefundAt(key uint64, now int64, n uint64)
	// LevelAt returns the tokens key's bucket holds at now (a key not
	// tracked is full).
	LevelAt(key uint64, now int64) float64
	// SweepAt forgets keys whose buckets are full again, returning how
	// many; the gate calls it about once a second from Gate.Tick.
	SweepAt(now int64) int
	// Len returns the number of tracked keys.
	Len() int
}

var _ KeyedLayer = (*Limiter)(nil)

// KeyedLayerSpec is what the gate knows of one keyed layer when it asks a
// KeyedLayerFactory for it: which layer (by the reason it denies with),
// its policy path, and the configuration of the Limiter the gate would
// otherwise build, rate, burst, table bound and escalation included, its
// clock anchored at the gate's now.
type KeyedLayerSpec struct {
	// Reason is the layer's denial reason: AccountLimit, AddressLimit or
	// MatchLimit.
	Reason Reason
	// Path is the layer's policy path: "account", "address" or "match".
	Path string
	// Limiter is the configuration of the layer's default Limiter.
	Limiter LimiterConfig
}

// KeyedLayerFactory builds the implementation of one keyed layer for a
// gate. An error fails NewGate, reported at the layer's policy path.
type KeyedLayerFactory func(spec KeyedLayerSpec) (KeyedLayer, error)

// WithKeyedLayer runs the keyed layer that denies with reason
// (AccountLimit, AddressLimit or MatchLimit) on the implementation f
// returns, instead of the gate's own Limiter. A layer the policy disables
// stays disabled and f is not called. Other reasons are ignored.
func WithKeyedLayer(reason Reason, f KeyedLayerFactory) GateOption {
	return func(c *gateConfig) {
		if c.layers == nil {
			c.layers = map[Reason]KeyedLayerFactory{}
		}
		c.layers[reason] = f
	}
}

// externalKeyed adapts a KeyedLayer to the gate's internal keyedBuckets.
type externalKeyed struct {
	l      KeyedLayer
	reason Reason
}

func (k *externalKeyed) takeAt(key uint64, now int64, n uint64) keyedResult {
	d := k.l.TakeAt(key, now, n)
	if d.Allowed {
		if d.Reason != TableFull {
			d.Reason = None
		}
		return keyedResult{ok: true, reason: d.Reason}
	}
	r := keyedResult{retry: d.RetryAfter, reason: d.Reason}
	if r.reason == Oversize || r.reason == None {
		r.reason = k.reason
	}
	if r.retry < 0 {
		r.retry = time.Duration(0)
	}
	return r
}

func (k *externalKeyed) refundAt(key uint64, now int64, n uint64) { k.l.RefundAt(key, now, n) }

func (k *externalKeyed) levelAt(key uint64, now int64) (float64, bool) {
	return k.l.LevelAt(key, now), true
}

func (k *externalKeyed) sweep(now int64) { k.l.SweepAt(now) }

func (k *externalKeyed) size() int { return k.l.Len() }

// newKeyed builds one keyed layer: the implementation WithKeyedLayer
// named for reason, or the gate's own Limiter.
func (c *gateConfig) newKeyed(b *Budget, path string, maxKeys int, esc *Escalation, reason Reason, now int64) (keyedBuckets, error) {
	f := c.layers[reason]
	if f == nil {
		return newLimiterKeyed(b, maxKeys, esc, reason, now, c.tableSeed)
	}
	spec := KeyedLayerSpec{Reason: reason, Path: path, Limiter: limiterConfigFor(b, maxKeys, esc, reason, now, c.tableSeed)}
	l, err := f(spec)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, errors.New("the keyed layer factory returned no layer")
	}
	return &externalKeyed{l: l, reason: reason}, nil
}
