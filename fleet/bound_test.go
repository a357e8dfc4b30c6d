package fleet

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/stretchr/testify/require"
)

// The fleet bucket of the hostile-account tests: 50 tokens a second,
// burst 50, leased 4 at a time.
const (
	tRate  = 50.0
	tBurst = 50.0
	tLease = 4
)

func hostilePolicy() core.Policy {
	return core.Policy{
		Channels: []core.Channel{{Name: "move", Class: core.ClassInput, Rate: new(1e5), Burst: new(1e5)}},
		Transport: core.Transport{
			Bytes:  core.Budget{Rate: new(1e9), Burst: new(1e9)},
			Frames: core.Budget{Rate: new(1e7), Burst: new(1e7)},
		},
		Account: core.Budget{Rate: new(tRate), Burst: new(tBurst)},
		Match:   core.Budget{Disabled: true},
		Strikes: core.Strikes{Weights: map[core.Reason]float64{core.AccountLimit: 0}},
	}
}

// server is one game server of a test: a gate (its account layer on the
// fleet, or its own when f is nil) and one session of the hostile account.
type server struct {
	g *core.Gate
	f *Fleet
	s core.Session
}

func newServer(t testing.TB, store Store, name string, cfg Config) *server {
	srv := &server{}
	var opts []core.GateOption
	if store != nil {
		cfg.Store, cfg.Server = store, name
		f, err := New(cfg)
		require.NoError(t, err)
		srv.f = f
		opts = f.GateOptions(core.AccountLimit)
	}
	now := atomicbucket.Nanotime()
	g, err := core.NewGate(hostilePolicy(), now, opts...)
	require.NoError(t, err)
	srv.g = g
	h, v := g.Open(netip.MustParseAddrPort("127.0.0.1:4000"), now)
	require.True(t, v.OK(), "%v", v)
	srv.s = h
	require.True(t, g.Authenticate(srv.s, 42, now).OK())
	if srv.f != nil {
		require.NoError(t, srv.f.Start())
		t.Cleanup(srv.f.Stop)
	}
	return srv
}

func (srv *server) addr() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.2:4001") }

// tally counts admitted messages in 10 ms slots of the gate's clock.
type tally struct {
	start int64
	slots []atomic.Int64
}

const slot10ms = int64(10 * time.Millisecond)

func newTally(d time.Duration) *tally {
	return &tally{start: atomicbucket.Nanotime(), slots: make([]atomic.Int64, int(d/time.Duration(slot10ms))+200)}
}

func (ta *tally) add(now int64) {
	if i := (now - ta.start) / slot10ms; i >= 0 && int(i) < len(ta.slots) {
		ta.slots[i].Add(1)
	}
}

// maxWindow returns the most admitted in any window of w within
// [from, to) of the run, and the window's start.
func (ta *tally) maxWindow(w, from, to time.Duration) (int64, time.Duration) {
	n := int(w / time.Duration(slot10ms))
	lo, hi := int(from/time.Duration(slot10ms)), min(int(to/time.Duration(slot10ms)), len(ta.slots))
	best, at := int64(0), 0
	for i := lo; i+n <= hi; i++ {
		var s int64
		for j := i; j < i+n; j++ {
			s += ta.slots[j].Load()
		}
		if s > best {
			best, at = s, i
		}
	}
	return best, time.Duration(at) * time.Duration(slot10ms)
}

// flood sends the hostile account's messages to every server as fast as
// one goroutine per server goes (a sleep of 500µs between sends) for d,
// tallying what the gates admit. It returns the slowest Check and, when
// samples is not nil, fills it with every Check's start (on ta's clock)
// and duration.
func flood(servers []*server, ta *tally, d time.Duration, samples *[]sample) time.Duration {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest atomic.Int64
	end := time.Now().Add(d)
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []sample
			for time.Now().Before(end) {
				now := atomicbucket.Nanotime()
				v := srv.g.Check(core.Message{Session: srv.s, Kind: 0, Size: 8}, now)
				took := atomicbucket.Nanotime() - now
				if took > slowest.Load() {
					slowest.Store(took)
				}
				if samples != nil {
					mine = append(mine, sample{at: now - ta.start, took: took})
				}
				if v.OK() {
					ta.add(now)
				}
				time.Sleep(500 * time.Microsecond)
			}
			if samples != nil {
				mu.Lock()
				*samples = append(*samples, mine...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return time.Duration(slowest.Load())
}

// sample is one Check: when it started, how long it took (ns).
type sample struct{ at, took int64 }

// waited returns the share of the samples that took longer than d. A
// take that waited on a stopped or slow Redis would take at least the
// store's timeout, every one of them; a loaded machine delays a few.
func waited(ss []sample, d time.Duration) float64 {
	n := 0
	for _, s := range ss {
		if s.took > int64(d) {
			n++
		}
	}
	return float64(n) / float64(max(1, len(ss)))
}

// p99 returns the 99th percentile of the durations of the samples that
// started in [from, to).
func p99(ss []sample, from, to time.Duration) time.Duration {
	var ds []int64
	for _, s := range ss {
		if s.at >= int64(from) && s.at < int64(to) {
			ds = append(ds, s.took)
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return time.Duration(ds[len(ds)*99/100])
}

// boundFor is the package's documented bound for an interval of length
// T shorter than the idle period: burst + rate·T + 2 × servers × lease.
func boundFor(servers int, T time.Duration) int64 {
	return int64(tBurst + tRate*T.Seconds() + float64(2*servers*tLease))
}

// fourServers runs the hostile account over 4 servers on store, and over
// 4 servers with per-process limits only, and checks the bound.
func fourServers(t *testing.T, store Store) {
	const n, d = 4, 4 * time.Second
	// A timeout well above a loaded machine's stalls: this test is of the
	// bound while the store is healthy (the fault tests take it away).
	cfg := Config{Lease: tLease, Refresh: 20 * time.Millisecond, Timeout: time.Second, Idle: 5 * time.Second, Heartbeat: 200 * time.Millisecond, Servers: n}
	var fleetSrv, localSrv []*server
	for i := range n {
		fleetSrv = append(fleetSrv, newServer(t, store, "s"+string(rune('a'+i)), cfg))
		localSrv = append(localSrv, newServer(t, nil, "", cfg))
	}
	ft, lt := newTally(d), newTally(d)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); flood(fleetSrv, ft, d, nil) }()
	go func() { defer wg.Done(); flood(localSrv, lt, d, nil) }()
	wg.Wait()
	bound := boundFor(n, time.Second)
	worst, at := ft.maxWindow(time.Second, 0, d)
	local, _ := lt.maxWindow(time.Second, 0, d)
	fSteady, _ := ft.maxWindow(time.Second, 2*time.Second, d)
	lSteady, _ := lt.maxWindow(time.Second, 2*time.Second, d)
	t.Logf("fleet: worst 1s window %d admitted (at %v), bound %d; steady %d/s. per-process: worst %d, steady %d/s (%.1f× the fleet's)",
		worst, at, bound, fSteady, local, lSteady, float64(lSteady)/float64(max(1, fSteady)))
	for i, s := range fleetSrv {
		st := s.f.Stats()
		t.Logf("server %d: %d rounds, %d errors, %d takes by OnFailure, %d live", i, st.Rounds, st.Errors, st.Fallback, st.Live)
	}
	require.LessOrEqual(t, worst, bound, "fleet-wide admitted over a 1s window")
	require.GreaterOrEqual(t, float64(lSteady), 3*float64(fSteady), "per-process limits alone admit about 4× as much")
	require.GreaterOrEqual(t, fSteady, int64(tRate*0.8), "the fleet still admits its rate")
	for _, s := range fleetSrv {
		st := s.f.Stats()
		require.Zero(t, st.Errors)
		require.Equal(t, n, st.Live)
	}
}

// The bound on a MemStore: servers in one process, no Redis needed.
func TestFourServersMemStore(t *testing.T) {
	fourServers(t, NewMemStore(nil))
}
