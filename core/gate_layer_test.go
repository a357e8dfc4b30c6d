package core

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingLayer is a KeyedLayer on a real Limiter that counts the takes
// and refunds the gate sends it.
type countingLayer struct {
	*Limiter
	takes, refunds atomic.Int64
}

func (c *countingLayer) TakeAt(key uint64, now int64, n uint64) Decision {
	c.takes.Add(1)
	return c.Limiter.TakeAt(key, now, n)
}

func (c *countingLayer) RefundAt(key uint64, now int64, n uint64) {
	c.refunds.Add(1)
	c.Limiter.RefundAt(key, now, n)
}

func countingFactory(t testing.TB, into **countingLayer) KeyedLayerFactory {
	return func(spec KeyedLayerSpec) (KeyedLayer, error) {
		l, err := NewLimiter(spec.Limiter)
		if err != nil {
			return nil, err
		}
		*into = &countingLayer{Limiter: l}
		return *into, nil
	}
}

// A gate whose account layer is a Limiter given through WithKeyedLayer
// decides every message as the gate's own account layer does, and the
// layer sees every take.
func TestWithKeyedLayerSameDecisions(t *testing.T) {
	p := testPolicy()
	p.Account = Budget{Rate: new(20.0), Burst: new(8.0)}
	p.Channels[kMove].Rate, p.Channels[kMove].Burst = new(1000.0), new(1000.0)
	var ext *countingLayer
	own := mustGate(t, p)
	other := mustGate(t, p, WithKeyedLayer(AccountLimit, countingFactory(t, &ext)))
	require.NotNil(t, ext)
	so, se := mustOpen(t, own, addrA, 0), mustOpen(t, other, addrA, 0)
	mustAuth(t, own, so, 7, 0)
	mustAuth(t, other, se, 7, 0)
	denied, reached := 0, 0
	for i := range 400 {
		now := int64(i) * sec / 100
		m := Message{Kind: kMove, Size: 10}
		m.Session = so
		a := own.Check(m, now)
		m.Session = se
		b := other.Check(m, now)
		require.Equal(t, a, b, "message %d", i)
		if a.Reason == AccountLimit {
			denied++
		}
		if a.OK() || a.Reason == AccountLimit {
			reached++
		}
	}
	assert.Positive(t, denied, "the account budget must deny some of the trace")
	assert.Equal(t, int64(reached), ext.takes.Load())
}

// When the match layer denies, the gate refunds the account layer given
// through WithKeyedLayer, so the all-or-nothing rule holds for it too.
func TestWithKeyedLayerRefund(t *testing.T) {
	p := testPolicy()
	p.Account = Budget{Rate: new(1.0), Burst: new(100.0)}
	p.Match = Budget{Rate: new(1.0), Burst: new(3.0)}
	var ext *countingLayer
	g := mustGate(t, p, WithKeyedLayer(AccountLimit, countingFactory(t, &ext)))
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 7, 0)
	for range 3 {
		require.True(t, g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 5}, 0).OK())
	}
	v := g.Check(Message{Session: s, Kind: kMove, Size: 10, Match: 5}, 0)
	require.Equal(t, MatchLimit, v.Reason)
	assert.Equal(t, int64(1), ext.refunds.Load())
	assert.InDelta(t, 97.0, ext.LevelAt(7, 0), 1e-9, "three takes stay, the refused one came back")
}

// The gate's hot path through an external keyed layer allocates nothing.
func TestWithKeyedLayerAllocs(t *testing.T) {
	var ext *countingLayer
	g := mustGate(t, benchPolicy(), WithKeyedLayer(AccountLimit, countingFactory(t, &ext)), WithKeyedLayer(MatchLimit, countingFactory(t, new(*countingLayer))))
	s := mustOpen(t, g, addrA, 0)
	mustAuth(t, g, s, 1, 0)
	now := int64(0)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		now += 1000
		if !g.Check(Message{Session: s, Kind: kMove, Size: 40, Match: 9}, now).OK() {
			t.Fatal("accept path denied")
		}
	}))
	assert.Positive(t, ext.takes.Load())
}

// A factory's error fails NewGate at the layer's path; a disabled layer
// never calls its factory; a factory sees the policy's budget.
func TestWithKeyedLayerFactory(t *testing.T) {
	boom := errors.New("no store")
	_, err := NewGate(testPolicy(), 0, WithKeyedLayer(MatchLimit, func(KeyedLayerSpec) (KeyedLayer, error) { return nil, boom }))
	var pe *PolicyError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "match", pe.Path)
	assert.ErrorIs(t, err, boom)

	p := testPolicy()
	p.Match.Disabled = true
	called := false
	mustGate(t, p, WithKeyedLayer(MatchLimit, func(KeyedLayerSpec) (KeyedLayer, error) { called = true; return nil, boom }))
	assert.False(t, called)

	var got KeyedLayerSpec
	mustGate(t, testPolicy(), WithKeyedLayer(AccountLimit, func(s KeyedLayerSpec) (KeyedLayer, error) {
		got = s
		return NewLimiter(s.Limiter)
	}))
	assert.Equal(t, AccountLimit, got.Reason)
	assert.Equal(t, "account", got.Path)
	assert.Equal(t, 1000.0, got.Limiter.Rate)
	assert.Equal(t, AccountLimit, got.Limiter.DenyReason)
}
