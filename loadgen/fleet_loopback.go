package loadgen

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/fleet"
	"github.com/sluicedev/sluice/internal/redisproc"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/server"
)

// RedisStart is the RunSpec.Redis that has a loopback run of several
// servers start its own redis-server on a free loopback port for the
// policy's fleet section (and stop it at the end).
const RedisStart = "start"

// fleetLoopback is the game servers of a loopback run of several
// (RunSpec.Servers): reference servers on distinct loopback ports, each
// with its own gate and, with the policy's fleet section, its own
// fleet.Fleet on one real Redis (the section's addresses, RunSpec.Redis,
// or a redis-server the run started: RedisStart). The run reads their
// counters summed (stats), and keeps each server's reads to count what it
// admitted (counts).
type fleetLoopback struct {
	srvs   []*server.Server
	fleets []*fleet.Server
	redis  *redisproc.Proc
	addrs  []string
	rt     *drive.RealTime // the run's clock, for the reads' times

	mu    sync.Mutex
	reads []fleetRead
}

// fleetRead is one read of every server's counters, at a run time.
type fleetRead struct {
	at    int64
	stats []server.Stats
}

// startFleetLoopback starts sp.Servers servers of policy p built from cfg.
func startFleetLoopback(ctx context.Context, sp RunSpec, p core.Policy, cfg server.Config) (*fleetLoopback, error) {
	// The servers listen on TCP only: a client over another transport
	// would find no listener (over UDP its datagrams go unanswered, and
	// every session would count as Disconnected).
	if sp.uses(drive.TransportWS) {
		return nil, &behave.ParamError{Owner: "run", Field: "Servers", Value: sp.Servers, Reason: "run over TCP: a run of several servers does not speak WebSocket"}
	}
	if sp.uses(drive.TransportUDP) {
		return nil, &behave.ParamError{Owner: "run", Field: "Servers", Value: sp.Servers, Reason: "run over TCP: a run of several servers does not speak UDP"}
	}
	fl := &fleetLoopback{}
	ok := false
	defer func() {
		if !ok {
			fl.close()
		}
	}()
	if p.Fleet.Enabled() {
		switch sp.Redis {
		case "":
		case RedisStart:
			r, err := redisproc.Start(ctx)
			if err != nil {
				return nil, fmt.Errorf("loadgen: the fleet's Redis: %w", err)
			}
			fl.redis = r
			p.Fleet.Redis = []string{r.Addr}
		default:
			p.Fleet.Redis = []string{sp.Redis}
		}
	}
	for i := range sp.Servers {
		c := cfg
		c.Policy = p
		if p.Fleet.Enabled() {
			fs, err := fleet.Open(ctx, p, fmt.Sprintf("server-%d", i))
			if err != nil {
				return nil, fmt.Errorf("loadgen: server %d: %w", i, err)
			}
			fl.fleets = append(fl.fleets, fs)
			c.GateOptions = append(append([]core.GateOption(nil), c.GateOptions...), fs.GateOptions...)
		}
		srv, err := server.New(c)
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		if err := srv.Start(); err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		fl.srvs = append(fl.srvs, srv)
		fl.addrs = append(fl.addrs, srv.Addr().String())
	}
	for _, fs := range fl.fleets {
		if err := fs.Fleet.Start(); err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
	}
	ok = true
	return fl, nil
}

// addr is the first server's address (the drivers' default).
func (fl *fleetLoopback) addr() netip.AddrPort { return fl.srvs[0].Addr() }

// close stops the servers, the fleets (returning their leases) and the
// Redis the run started.
func (fl *fleetLoopback) close() {
	for _, s := range fl.srvs {
		s.Close()
	}
	for _, fs := range fl.fleets {
		_ = fs.Close()
	}
	if fl.redis != nil {
		fl.redis.Stop()
	}
}

// stats reads every server's counters, keeps them, and returns their sum.
func (fl *fleetLoopback) stats(context.Context) (server.Stats, error) {
	r := fleetRead{stats: make([]server.Stats, len(fl.srvs))}
	if fl.rt != nil {
		r.at = fl.rt.Now()
	}
	for i, s := range fl.srvs {
		r.stats[i] = s.Stats()
	}
	fl.mu.Lock()
	fl.reads = append(fl.reads, r)
	fl.mu.Unlock()
	sum := server.Stats{Populations: map[string]server.PopulationStats{}}
	for _, st := range r.stats {
		addStats(&sum, &st)
	}
	return sum, nil
}

// addStats adds b's counters to a: those the run reads (the populations'
// channel rows, connections, frames and service times) and the simple
// totals.
func addStats(a, b *server.Stats) {
	for name, pb := range b.Populations {
		pa := a.Populations[name]
		pa.Connections += pb.Connections
		pa.Frames += pb.Frames
		pa.Bytes += pb.Bytes
		pa.Accepted += pb.Accepted
		pa.Inputs += pb.Inputs
		pa.Requests += pb.Requests
		pa.Failed += pb.Failed
		pa.Pongs += pb.Pongs
		pa.Lockouts += pb.Lockouts
		pa.Dropped = addCounts(pa.Dropped, pb.Dropped)
		pa.Rejected = addCounts(pa.Rejected, pb.Rejected)
		pa.Disconnects = addCounts(pa.Disconnects, pb.Disconnects)
		if pa.Channels == nil {
			pa.Channels = map[string]server.ChannelStats{}
		}
		for ch, cb := range pb.Channels {
			ca := pa.Channels[ch]
			ca.Frames += cb.Frames
			ca.Accepted += cb.Accepted
			ca.Dropped = addCounts(ca.Dropped, cb.Dropped)
			ca.Rejected = addCounts(ca.Rejected, cb.Rejected)
			pa.Channels[ch] = ca
		}
		a.Populations[name] = pa
	}
	a.Conns.Accepted += b.Conns.Accepted
	a.Conns.Refused += b.Conns.Refused
	a.Conns.Open += b.Conns.Open
	a.Conns.Peak += b.Conns.Peak
	a.Ticks += b.Ticks
	a.Commands += b.Commands
	a.QueueFull += b.QueueFull
	a.Frames += b.Frames
	a.Bytes += b.Bytes
	a.ReadService += b.ReadService
	a.TickService += b.TickService
	a.ProcessCPU = max(a.ProcessCPU, b.ProcessCPU) // one process
	a.Uptime = max(a.Uptime, b.Uptime)
}

func addCounts(a, b map[string]uint64) map[string]uint64 {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = map[string]uint64{}
	}
	for k, n := range b {
		a[k] += n
	}
	return a
}

// counts returns what each server admitted (see record.ServerCounts), from its
// reads: the measured window from the first read at or after warmup to the
// last, each read's change in the interval it ends.
func (fl *fleetLoopback) counts(labels []string, kinds map[string]behave.Kind, warmup, interval, duration time.Duration) []record.ServerCounts {
	a := record.NewAdmitted(len(fl.srvs), len(labels), warmup, interval, duration)
	fl.mu.Lock()
	reads := fl.reads
	fl.mu.Unlock()
	if len(reads) == 0 {
		return a.Servers
	}
	admittedOf := func(st *server.Stats, pop int) int64 {
		var n int64
		for ch, cs := range st.Populations[labels[pop]].Channels {
			if k, ok := kinds[ch]; ok && record.GameKind(k) {
				n += int64(cs.Accepted)
			}
		}
		return n
	}
	warm := len(reads) - 1
	for i, r := range reads {
		if r.at >= int64(warmup)-int64(interval)/2 {
			warm = i
			break
		}
	}
	last := &reads[len(reads)-1]
	for s := range fl.srvs {
		sc := &a.Servers[s]
		for pop := range labels {
			sc.Admitted[pop] = admittedOf(&last.stats[s], pop) - admittedOf(&reads[warm].stats[s], pop)
			for i := 1; i < len(reads); i++ {
				d := admittedOf(&reads[i].stats[s], pop) - admittedOf(&reads[i-1].stats[s], pop)
				// A read is made at an interval's end, a little late: its
				// change counts in the interval whose end is nearest.
				k := max((reads[i].at+int64(interval)/2)/int64(interval)-1, 0)
				if pts := sc.Series[pop]; len(pts) > 0 {
					pts[min(k, int64(len(pts)-1))] += d
				}
			}
		}
	}
	return a.Servers
}
