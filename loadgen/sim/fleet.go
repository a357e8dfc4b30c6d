package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/fleet"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
)

// Fleet is the sim driver of a run with several game servers: one Sim
// (and gate) per server, in one virtual time. With the policy's fleet
// section, the gates' fleet layers (fleet.Fleet, one per server) share
// one fleet.MemStore, the same GCRA store as Redis in one process, read
// on the virtual clock; their refresher rounds (fleet.Fleet.Step) are jobs
// of the simulation, every fleet.refresh, each server in order, so a run
// is as exact and reproducible as a one-server one. Without it each gate
// keeps its own limits, as separate processes do. Redis addresses in the
// section are not dialled.
//
// Poll runs every server's work, and the refresher rounds, in time order
// (ties: servers in order, then the round) and hands out the servers'
// events in order of At (ties: by server); every server's clock is moved
// to the time handed out, so that a write lands at the worker's time on
// whichever server it goes to. Make one with NewFleet; one worker
// calls it.
type Fleet struct {
	sims    []*Sim
	fleets  []*fleet.Fleet // nil: per-process limits
	route   drive.ServerRoute
	on      map[drive.ConnID]int // the server of each connection
	now     int64                // the virtual time: the store's clock
	refresh int64
	round   int64 // the next refresher round; MaxInt64: none
	polls   uint
	count   *record.Admitted
}

// NewFleet returns the sim driver of n servers of policy p, each built
// from cfg (its OnDecision also counted per server in count).
func NewFleet(p core.Policy, cfg SimConfig, clients []behave.Client, n int, count *record.Admitted) (*Fleet, error) {
	if len(cfg.Traces) > 0 || cfg.Record != nil {
		return nil, &behave.ParamError{Owner: "run", Field: "Servers", Value: n, Reason: "runs no trace replay nor recording: they are of one server"}
	}
	fs := &Fleet{route: drive.NewServerRoute(n, clients), on: map[drive.ConnID]int{}, round: math.MaxInt64, count: count}
	var layers []core.Reason
	var store *fleet.MemStore
	if p.Fleet.Enabled() {
		store = fleet.NewMemStore(func() int64 { return fs.now })
		var err error
		var fc fleet.Config
		if fc, layers, err = fleet.ConfigFromPolicy(p, store); err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		fc.Servers = n
		for i := range n {
			fc.Server = fmt.Sprintf("server-%d", i)
			f, err := fleet.New(fc)
			if err != nil {
				return nil, fmt.Errorf("loadgen: %w", err)
			}
			fs.fleets = append(fs.fleets, f)
		}
		fs.refresh = int64(fs.fleets[0].Refresh())
		fs.round = 0
	}
	base := cfg.OnDecision
	for i := range n {
		c := cfg
		c.GateOptions = append([]core.GateOption(nil), cfg.GateOptions...)
		if fs.fleets != nil {
			c.GateOptions = append(c.GateOptions, fs.fleets[i].GateOptions(layers...)...)
		}
		c.OnDecision = func(pop int, k behave.Kind, o record.Outcome, at int64) {
			if base != nil {
				base(pop, k, o, at)
			}
			if o == record.Accepted {
				count.Add(i, pop, k, at, 1)
			}
		}
		s, err := NewSim(p, c, clients)
		if err != nil {
			return nil, err
		}
		fs.sims = append(fs.sims, s)
	}
	return fs, nil
}

// Now implements drive.Driver.
func (fs *Fleet) Now() int64 { return fs.now }

// Frames is the sum of the servers' Sim.Frames.
func (fs *Fleet) Frames() int64 {
	var n int64
	for _, s := range fs.sims {
		n += s.Frames()
	}
	return n
}

// Busy is the sum of the servers' Sim.Busy.
func (fs *Fleet) Busy() time.Duration {
	var d time.Duration
	for _, s := range fs.sims {
		d += s.Busy()
	}
	return d
}

// Dial implements drive.Driver: the client's current server.
func (fs *Fleet) Dial(id drive.ConnID, addr uint32) error {
	return fs.DialServer(id, addr, behave.ServerAssigned)
}

// DialServer implements drive.ServerDialer.
func (fs *Fleet) DialServer(id drive.ConnID, addr uint32, server uint8) error {
	i, err := fs.route.Pick(id.Client, server)
	if err != nil {
		return err
	}
	fs.on[id] = i
	return fs.sims[i].Dial(id, addr)
}

// Write implements drive.Driver.
func (fs *Fleet) Write(id drive.ConnID, p []byte) error {
	i, ok := fs.on[id]
	if !ok {
		return drive.ErrConnClosed
	}
	return fs.sims[i].Write(id, p)
}

// CloseWrite implements halfCloser.
func (fs *Fleet) CloseWrite(id drive.ConnID) error {
	i, ok := fs.on[id]
	if !ok {
		return drive.ErrConnClosed
	}
	return fs.sims[i].CloseWrite(id)
}

// Close implements drive.Driver.
func (fs *Fleet) Close(id drive.ConnID) error {
	i, ok := fs.on[id]
	if !ok {
		return nil
	}
	delete(fs.on, id)
	return fs.sims[i].Close(id)
}

// Poll implements drive.Driver (see Fleet).
func (fs *Fleet) Poll(ctx context.Context, until int64, ev *drive.Event) (bool, error) {
	if fs.polls%256 == 0 {
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
	fs.polls++
	limit := max(until, fs.now)
	for _, s := range fs.sims {
		s.limit = limit
	}
	for {
		t, who := fs.round, -1
		for i, s := range fs.sims {
			if j := s.nextJob(); j < t || j == t && who < 0 {
				t, who = j, i
			}
		}
		if t > limit {
			break
		}
		if at, has := fs.peek(); has && at < t {
			break
		}
		if who < 0 {
			fs.now = max(fs.now, t)
			for _, f := range fs.fleets {
				if err := f.Step(time.Unix(0, t)); err != nil {
					return false, err
				}
			}
			fs.round += fs.refresh
			continue
		}
		s := fs.sims[who]
		s.vt.AdvanceTo(t)
		s.begin()
		s.runJobs(t)
		s.end()
	}
	first, at := -1, int64(0)
	for i, s := range fs.sims {
		if a, has := s.vt.Peek(); has && a <= limit && (first < 0 || a < at) {
			first, at = i, a
		}
	}
	got := false
	if first >= 0 {
		got, _ = fs.sims[first].vt.Poll(context.Background(), until, ev)
		fs.now = max(fs.now, ev.At)
	} else {
		fs.now = limit
	}
	for _, s := range fs.sims {
		s.vt.AdvanceTo(fs.now)
	}
	return got, nil
}

// peek returns the earliest event queued on any server.
func (fs *Fleet) peek() (int64, bool) {
	at, any := int64(0), false
	for _, s := range fs.sims {
		if a, has := s.vt.Peek(); has && (!any || a < at) {
			at, any = a, true
		}
	}
	return at, any
}
