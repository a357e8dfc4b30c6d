package fleet

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicedev/sluice/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testSpec(rate, burst float64, maxKeys int) core.KeyedLayerSpec {
	return core.KeyedLayerSpec{Reason: core.AccountLimit, Path: "account", Limiter: core.LimiterConfig{
		Rate: rate, Burst: burst, MaxKeys: maxKeys, DenyReason: core.AccountLimit, Clock: func() int64 { return 0 },
	}}
}

func newLayer(t testing.TB, cfg Config, spec core.KeyedLayerSpec) (*Fleet, *Layer) {
	if cfg.Store == nil {
		cfg.Store = NewMemStore(nil)
	}
	f, err := New(cfg)
	require.NoError(t, err)
	l, err := f.Layer(spec)
	require.NoError(t, err)
	return f, l.(*Layer)
}

// manual runs one refresher round by hand, as the goroutine would.
func manual(f *Fleet, r *refresher) { f.round(r, time.Now(), false) }

// A key's first take is served on credit (one lease); the next round
// charges the credit to the fleet bucket as a debt and tops the lease
// up; takes beyond the lease are denied with the layer's reason until the
// refresher leases more; the fleet bucket bounds the whole.
func TestLayerCreditAndLease(t *testing.T) {
	store := NewMemStore(nil)
	f, l := newLayer(t, Config{Store: store, Lease: 4}, testSpec(1e-3, 10, 100))
	var r refresher
	for i := range 4 {
		require.True(t, l.TakeAt(7, 0, 1).Allowed, "credit take %d", i)
	}
	d := l.TakeAt(7, 0, 1)
	require.False(t, d.Allowed)
	assert.Equal(t, core.AccountLimit, d.Reason)
	assert.Positive(t, d.RetryAfter)

	manual(f, &r) // charges 4 of debt, leases 4 more: 8 of 10 spent
	assert.Equal(t, 4.0, l.LevelAt(7, 0))
	for range 4 {
		require.True(t, l.TakeAt(7, 0, 1).Allowed)
	}
	manual(f, &r) // 2 left in the fleet bucket
	assert.Equal(t, 2.0, l.LevelAt(7, 0))
	manual(f, &r) // still 2 held: under the lease, but the bucket is empty
	for range 2 {
		require.True(t, l.TakeAt(7, 0, 1).Allowed)
	}
	manual(f, &r)
	assert.False(t, l.TakeAt(7, 0, 1).Allowed, "the fleet bucket (burst 10) is spent")
}

// A second server sees the first's spending: they share the bucket.
func TestLayerTwoServersShare(t *testing.T) {
	store := NewMemStore(nil)
	fa, a := newLayer(t, Config{Store: store, Lease: 5}, testSpec(1e-3, 10, 100))
	fb, b := newLayer(t, Config{Store: store, Lease: 5}, testSpec(1e-3, 10, 100))
	var ra, rb refresher
	admitted := 0
	for range 10 {
		for _, l := range []*Layer{a, b} {
			for l.TakeAt(1, 0, 1).Allowed {
				admitted++
			}
		}
		manual(fa, &ra)
		manual(fb, &rb)
	}
	// a: credit 5, then debt 5 and a grant of 5; b: credit 5, then its debt
	// leaves the bucket in deficit and it is granted nothing.
	assert.Equal(t, 15, admitted)
	assert.LessOrEqual(t, admitted, 10+2*2*5, "within burst + 2 × servers × lease at T≈0")
	for range 5 {
		manual(fa, &ra)
		manual(fb, &rb)
	}
	assert.False(t, a.TakeAt(1, 0, 1).Allowed)
	assert.False(t, b.TakeAt(1, 0, 1).Allowed)
}

// Idle leases go back to the fleet bucket.
func TestLayerIdleReturn(t *testing.T) {
	store := NewMemStore(nil)
	f, l := newLayer(t, Config{Store: store, Lease: 4, Idle: time.Millisecond, Refresh: time.Millisecond}, testSpec(1e-3, 10, 100))
	var r refresher
	require.True(t, l.TakeAt(3, 0, 1).Allowed) // credit 4, 3 left
	manual(f, &r)                              // debt 4 charged, lease topped up by 1: 4 held, 5 charged
	time.Sleep(5 * time.Millisecond)
	manual(f, &r) // no take since: 4 returned
	assert.Zero(t, l.LevelAt(3, 0))
	ops := []LeaseOp{{Key: l.keyName(3), Limit: l.limit, Want: 10, Least: 1}}
	require.NoError(t, store.Lease(context.Background(), ops))
	assert.Equal(t, int64(9), ops[0].Granted, "1 spent, the rest back in the fleet bucket")
}

// A slot fills two cache lines exactly.
func TestSlotSize(t *testing.T) {
	assert.Equal(t, uintptr(128), unsafe.Sizeof(slot{}))
}

// Oversize costs, a refund, a full table.
func TestLayerEdges(t *testing.T) {
	_, l := newLayer(t, Config{Lease: 4}, testSpec(1, 10, 2))
	assert.Equal(t, core.Oversize, l.TakeAt(1, 0, 11).Reason)
	assert.Equal(t, core.Oversize, l.TakeAt(1, 0, 0).Reason)
	require.True(t, l.TakeAt(1, 0, 3).Allowed)
	assert.Equal(t, 1.0, l.LevelAt(1, 0))
	l.RefundAt(1, 0, 3)
	assert.Equal(t, 4.0, l.LevelAt(1, 0))
	require.True(t, l.TakeAt(2, 0, 1).Allowed)
	assert.Equal(t, core.TableFull, l.TakeAt(3, 0, 1).Reason, "MaxKeys 2")
	require.True(t, l.TakeAt(0, 0, 1).Allowed, "key 0 is a key like another")
	assert.Equal(t, 3, l.Len())
}

// While the store is unavailable a refund goes to the local share, so a
// take the share served and a later layer refused never becomes a leased
// token.
func TestLayerRefundWhileDown(t *testing.T) {
	f, l := newLayer(t, Config{Lease: 2}, testSpec(1e-3, 10, 10))
	require.True(t, l.TakeAt(4, 0, 1).Allowed) // credit: 1 of 2 left
	f.healthy.Store(false)
	require.True(t, l.TakeAt(4, 0, 1).Allowed) // the lease's last
	require.True(t, l.TakeAt(4, 0, 1).Allowed) // the share's
	l.RefundAt(4, 0, 1)                        // a later layer refused it
	assert.Zero(t, l.LevelAt(4, 0), "the lease holds no token it was not granted")
}

// Store down: takes beyond the lease follow OnFailure.
func TestLayerOnFailure(t *testing.T) {
	for _, tc := range []struct {
		of      OnFailure
		servers int
		allow   int
	}{{FailDeny, 1, 0}, {FailAllow, 1, 50}, {FailLocal, 1, 10}, {FailLocal, 4, 2}} {
		f, l := newLayer(t, Config{Lease: 2, OnFailure: tc.of, Servers: tc.servers}, testSpec(1e-3, 10, 10))
		f.healthy.Store(false)
		n := 0
		for range 50 {
			if l.TakeAt(9, 0, 1).Allowed {
				n++
			}
		}
		assert.Equal(t, tc.allow, n, "OnFailure %d, %d servers (the local share: burst 10 ÷ servers)", tc.of, tc.servers)
		assert.Equal(t, uint64(50-0), l.fallback.Load())
	}
}

// The take path allocates nothing, credit and denial included.
func TestLayerAllocs(t *testing.T) {
	_, l := newLayer(t, Config{Lease: 1 << 20}, testSpec(1, 1<<21, 100))
	key := uint64(0)
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		key++
		l.TakeAt(key%50, 0, 1)
	}))
	_, d := newLayer(t, Config{Lease: 1}, testSpec(1, 1, 100))
	d.TakeAt(1, 0, 1)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { d.TakeAt(1, 0, 1) }))
}

// Concurrent takes never spend more than was leased (run with -race).
func TestLayerConcurrentTakes(t *testing.T) {
	f, l := newLayer(t, Config{Lease: 100, Refresh: time.Millisecond}, testSpec(1e-3, 1000, 100))
	require.NoError(t, f.Start())
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
				if l.TakeAt(5, 0, 1).Allowed {
					n++
				}
			}
			mu.Lock()
			admitted += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	f.Stop()
	assert.LessOrEqual(t, admitted, 1000+2*100, "burst + 2 × servers × lease")
	assert.Greater(t, admitted, 100, "the refresher topped the lease up")
}

// flakyStore is a MemStore whose calls fail while down is set: a store
// that went away and came back.
type flakyStore struct {
	*MemStore
	down atomic.Bool
}

var errDown = errors.New("store down")

func (s *flakyStore) Lease(ctx context.Context, ops []LeaseOp) error {
	if s.down.Load() {
		return errDown
	}
	return s.MemStore.Lease(ctx, ops)
}

func (s *flakyStore) Heartbeat(ctx context.Context, server string, ttl time.Duration) (int, error) {
	if s.down.Load() {
		return 0, errDown
	}
	return s.MemStore.Heartbeat(ctx, server, ttl)
}

// A fleet with no lease to ask for still finds its store back: while it
// is unavailable the refresher sends a heartbeat every round.
func TestFleetRecoversIdle(t *testing.T) {
	st := &flakyStore{MemStore: NewMemStore(nil)}
	st.down.Store(true)
	f, _ := newLayer(t, Config{Store: st, Refresh: 5 * time.Millisecond, Heartbeat: time.Hour}, testSpec(1, 10, 10))
	require.NoError(t, f.Start())
	defer f.Stop()
	require.Eventually(t, func() bool { return !f.Healthy() }, time.Second, time.Millisecond)
	st.down.Store(false)
	require.Eventually(t, f.Healthy, time.Second, time.Millisecond, "healthy again with no key active")
	assert.Positive(t, f.Stats().Errors)
}
