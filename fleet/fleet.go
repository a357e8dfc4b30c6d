package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/core"
)

// Config configures a Fleet. Zero durations take the defaults of the
// policy's fleet section (core.DefaultFleet*).
type Config struct {
	// Store holds the fleet buckets (NewRedisStore, or NewMemStore for
	// servers in one process). Required.
	Store Store
	// Server names this server among the fleet's live servers; it must be
	// unique. Default: random.
	Server string
	// Lease is the tokens a server leases at a time; 0: the layer's burst
	// ÷ 8, at least 1.
	Lease uint32
	// Refresh is the refresher's period; Timeout bounds one round of store
	// calls; Idle is how long a lease may go unused before it is
	// returned; Heartbeat is how often the server says it is alive.
	Refresh, Timeout, Idle, Heartbeat time.Duration
	// OnFailure is what takes beyond the lease do while the store is
	// unavailable.
	OnFailure OnFailure
	// Prefix starts every key the layers write. Default "sluice".
	Prefix string
	// Servers is the number of live servers to assume until the first
	// heartbeat answers (it sizes the local share). Default 1.
	Servers int
}

// ConfigFromPolicy returns the Config the policy's fleet section asks for
// on store, and the keyed layers it shares. The policy must be valid.
func ConfigFromPolicy(p core.Policy, store Store) (Config, []core.Reason, error) {
	n := p.Normalized()
	if err := n.Validate(); err != nil {
		return Config{}, nil, err
	}
	f := n.Fleet
	if !f.Enabled() {
		return Config{}, nil, errors.New("fleet: the policy has no fleet section")
	}
	of, _ := ParseOnFailure(f.OnFailure)
	c := Config{
		Store: store, Refresh: time.Duration(*f.Refresh), Timeout: time.Duration(*f.Timeout),
		Idle: time.Duration(*f.Idle), Heartbeat: time.Duration(*f.Heartbeat), OnFailure: of, Prefix: f.Prefix,
	}
	if f.Lease != nil {
		c.Lease = *f.Lease
	}
	var rs []core.Reason
	for _, l := range f.Layers {
		r, _ := core.FleetLayerReason(l)
		rs = append(rs, r)
	}
	return c, rs, nil
}

// Stats are a Fleet's counters.
type Stats struct {
	Rounds   uint64 // refresher rounds that reached the store
	Errors   uint64 // store calls that failed or timed out
	Healthy  bool   // the last round succeeded
	Live     int    // live servers, from the heartbeats
	Fallback uint64 // takes decided by OnFailure
}

// Fleet is one server's part of a fleet: the fleet-wide keyed layers of
// its gate and the refresher goroutine that keeps their leases, which the
// caller starts (Start) and stops (Stop). No take ever waits for it: the
// refresher tops leases up, charges credit, returns idle leases, counts
// the live servers by heartbeats and, when the store fails or is slower
// than Timeout, marks it unavailable so that takes fall back to
// OnFailure, until a round succeeds again.
//
// Build one with New; the zero value is not usable. Safe for concurrent
// use.
type Fleet struct {
	cfg     Config
	healthy atomic.Bool
	live    atomic.Int64
	rounds  atomic.Uint64
	errs    atomic.Uint64

	mu      sync.Mutex // layers, start and stop
	layers  []*Layer
	stop    chan struct{}
	done    chan struct{}
	started bool
	stepper stepper // Step's refresher state
}

// New returns a Fleet on cfg.Store, not started. It starts healthy: a
// server counts itself alone until its first heartbeat.
func New(cfg Config) (*Fleet, error) {
	if cfg.Store == nil {
		return nil, errors.New("fleet: Config.Store is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.Refresh, core.DefaultFleetRefresh)
	def(&cfg.Timeout, core.DefaultFleetTimeout)
	def(&cfg.Idle, core.DefaultFleetIdle)
	def(&cfg.Heartbeat, core.DefaultFleetHeartbeat)
	if cfg.Refresh < 0 || cfg.Timeout < 0 || cfg.Idle < 0 || cfg.Heartbeat < 0 {
		return nil, errors.New("fleet: durations must be positive")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "sluice"
	}
	if cfg.Server == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Server = hex.EncodeToString(b[:])
	}
	if cfg.Servers < 1 {
		cfg.Servers = 1
	}
	f := &Fleet{cfg: cfg}
	f.healthy.Store(true)
	f.live.Store(int64(cfg.Servers))
	return f, nil
}

// Layer builds the fleet-wide layer for spec (a core.KeyedLayerFactory).
func (f *Fleet) Layer(spec core.KeyedLayerSpec) (core.KeyedLayer, error) {
	lc := spec.Limiter
	lim := Limit{Rate: lc.Rate, Burst: lc.Burst}
	if err := lim.valid(); err != nil {
		return nil, err
	}
	lease := uint64(f.cfg.Lease)
	if lease == 0 {
		lease = defaultLease(lim.Burst)
	}
	lease = min(lease, uint64(lim.Burst))
	lc.DisableEscalation = true
	l := &Layer{
		f: f, path: spec.Path, reason: spec.Reason, limit: lim, lease: lease,
		maxCost: uint64(lim.Burst), open: lc.FailOpen, onFail: f.cfg.OnFailure,
		tab: newTable(lc.MaxKeys), shareCfg: lc, prefix: f.cfg.Prefix,
		defaultRetry: f.cfg.Refresh,
	}
	if err := l.setShare(int(f.live.Load())); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.layers = append(f.layers, l)
	f.mu.Unlock()
	return l, nil
}

// GateOptions runs the gate's layers of the given reasons on this fleet.
func (f *Fleet) GateOptions(layers ...core.Reason) []core.GateOption {
	opts := make([]core.GateOption, len(layers))
	for i, r := range layers {
		opts[i] = core.WithKeyedLayer(r, f.Layer)
	}
	return opts
}

// Start starts the refresher. It returns an error if already started.
func (f *Fleet) Start() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return errors.New("fleet: already started")
	}
	f.started = true
	f.healthy.Store(true)
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	go f.run(f.stop, f.done)
	return nil
}

// Stop stops the refresher, returns every unspent lease to the store and
// leaves the live servers, each within Timeout; it waits for the
// refresher to end. Takes after Stop follow OnFailure. A stopped Fleet
// may be started again.
func (f *Fleet) Stop() {
	f.mu.Lock()
	if !f.started {
		f.mu.Unlock()
		return
	}
	f.started = false
	close(f.stop)
	done := f.done
	f.mu.Unlock()
	<-done
}

// Stats returns the fleet's counters.
func (f *Fleet) Stats() Stats {
	s := Stats{Rounds: f.rounds.Load(), Errors: f.errs.Load(), Healthy: f.healthy.Load(), Live: int(f.live.Load())}
	f.mu.Lock()
	for _, l := range f.layers {
		s.Fallback += l.fallback.Load()
	}
	f.mu.Unlock()
	return s
}

// Healthy reports whether the last round of store calls succeeded.
func (f *Fleet) Healthy() bool { return f.healthy.Load() }

func (f *Fleet) run(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(f.cfg.Refresh)
	defer tick.Stop()
	var st stepper
	for {
		f.once(&st, time.Now())
		select {
		case <-stop:
			f.round(&st.r, time.Now(), true)
			ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
			_ = f.cfg.Store.Leave(ctx, f.cfg.Server)
			cancel()
			f.healthy.Store(false) // no refresher: no more credit
			return
		case <-tick.C:
		}
	}
}

// heartbeat reports this server alive and reads the live count,
// reporting whether the store answered.
func (f *Fleet) heartbeat() bool {
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	n, err := f.cfg.Store.Heartbeat(ctx, f.cfg.Server, 3*f.cfg.Heartbeat)
	cancel()
	if err != nil {
		f.errs.Add(1)
		f.healthy.Store(false)
		return false
	}
	if int64(n) != f.live.Swap(int64(n)) {
		f.mu.Lock()
		ls := append([]*Layer(nil), f.layers...)
		f.mu.Unlock()
		for _, l := range ls {
			if l.setShare(n) != nil {
				f.errs.Add(1)
			}
		}
	}
	return true
}

// refresher is the state of one refresher goroutine's rounds.
type refresher struct {
	ops  []LeaseOp
	refs []ref
}

type ref struct {
	l        *Layer
	s        *slot
	returned bool
}

// round tops up every live lease under its lease, charges credit, returns
// leases idle for Idle (all of them when final), in one batch of store
// calls. It reports whether it had anything to ask.
func (f *Fleet) round(r *refresher, now time.Time, final bool) bool {
	f.mu.Lock()
	layers := append([]*Layer(nil), f.layers...)
	f.mu.Unlock()
	r.ops, r.refs = r.ops[:0], r.refs[:0]
	t := now.UnixNano()
	for _, l := range layers {
		l.active = l.tab.popAll(l.active)
		for i := 0; i < len(l.active); {
			s := l.active[i]
			if f.visit(r, l, s, t, final) {
				i++
				continue
			}
			last := len(l.active) - 1 // returned: off the list
			l.active[i], l.active[last] = l.active[last], nil
			l.active = l.active[:last]
		}
	}
	if len(r.ops) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
	err := f.cfg.Store.Lease(ctx, r.ops)
	cancel()
	if err != nil {
		f.errs.Add(1)
		f.healthy.Store(false)
		for _, rf := range r.refs {
			if rf.returned { // the tokens stay charged: conservative
				rf.s.leased, rf.s.last = false, 0
			}
		}
		return true
	}
	f.rounds.Add(1)
	for i, rf := range r.refs {
		op := &r.ops[i]
		s := rf.s
		if op.Debt > 0 {
			s.leased = true
		}
		if rf.returned {
			s.leased, s.last = false, 0
			continue
		}
		if op.Granted > 0 {
			for {
				w := s.word.Load()
				if s.word.CompareAndSwap(w, w+uint64(op.Granted)) {
					break
				}
			}
		}
		s.retry.Store(int64(op.Retry))
		s.last = s.word.Load()
	}
	f.healthy.Store(true) // after the grants: see run
	return true
}

// visit adds the operation that slot s of layer l needs this round, if
// any; it returns false when the lease was taken back (returned, or not
// live), so that s leaves the active list.
func (f *Fleet) visit(r *refresher, l *Layer, s *slot, t int64, final bool) bool {
	w := s.word.Load()
	if w&live == 0 {
		return false
	}
	if s.name == "" {
		s.name = l.keyName(s.key.Load())
	}
	if w != s.last {
		s.idleSince, s.last = t, w
	}
	op := LeaseOp{Key: s.name, Limit: l.limit}
	if !s.leased {
		op.Debt = int64(s.credit.Load())
	}
	st := w & stockMask
	returned := false
	switch {
	case final || s.leased && t-s.idleSince >= int64(f.cfg.Idle):
		if !s.word.CompareAndSwap(w, 0) {
			return true // a take: not idle after all
		}
		op.Return, returned = int64(st), true
	case st < l.lease:
		op.Want, op.Least = int64(l.lease-st), 1
	}
	if op.Debt != 0 || op.Return != 0 || op.Want != 0 {
		r.ops = append(r.ops, op)
		r.refs = append(r.refs, ref{l: l, s: s, returned: returned})
	} else if returned {
		// Nothing to give back (the lease was spent, its credit charged):
		// returned now, so that the next lease's credit is charged and
		// its idle time counts from it.
		s.leased, s.last = false, 0
	}
	return !returned
}

// String describes the fleet's configuration.
func (f *Fleet) String() string {
	return fmt.Sprintf("fleet server %s: lease refresh %v, timeout %v, idle %v", f.cfg.Server, f.cfg.Refresh, f.cfg.Timeout, f.cfg.Idle)
}
