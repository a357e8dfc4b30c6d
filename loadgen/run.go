package loadgen

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/loopback"
	"github.com/sluicedev/sluice/loadgen/proto"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/sluicedev/sluice/loadgen/sim"
	"github.com/sluicedev/sluice/trace"
)

// RunSpec is one run: a plan, how to measure it, and its bounds.
type RunSpec struct {
	Plan behave.Plan
	// Warmup is excluded from Result.Recorder (counts, decisions and
	// histograms: everything recorded before it); Series still cover it.
	// 0 ≤ Warmup < Plan.Duration.
	Warmup time.Duration
	// Interval is the width of one Series point; default 1s. The run may
	// have at most MaxIntervals of them.
	Interval time.Duration
	// Config bounds the workers (reply timeout, action count, pending and
	// held caps).
	Config drive.RunConfig
	// Workers is the number of worker goroutines of a loopback run,
	// default GOMAXPROCS (at most one per client). A sim run always has
	// one worker, for determinism.
	Workers int
	// TickRate is the server's (or the simulated server's) tick rate in
	// Hz; default 30.
	TickRate float64
	// Progress, if set, is called with the run's time so far and its
	// length, from the caller's goroutine, at most about 10 times a
	// second, and once with done = total when a run completes.
	Progress func(done, total time.Duration)
	// NoLimits runs the loopback server with server.Config.NoLimits: no
	// gate call at all, every well-formed frame accepted. It is the
	// baseline for what the gate costs (Result.ServerCPU per frame);
	// RunSim refuses it (the sim is the gate).
	NoLimits bool
	// Remote, if set, is a server already running elsewhere (another
	// process: `sluice serve`, or a harness's child) that RunLoopback
	// drives instead of starting one in-process; RunSim refuses it. The
	// server must run the policy RunLoopback is given (for the channels'
	// codes), with room for every client's connection; its tick rate and
	// limits are its own, so TickRate and NoLimits must be left unset.
	Remote *Remote
	// Protocol is how the clients of a loopback run against a Remote
	// frame what they send and read what the server answers (see package
	// loadgen/proto); nil is the reference protocol, the only one the
	// in-process server and the sim speak.
	Protocol proto.Protocol
	// Record, if set, receives a trace of everything the server saw (see
	// package trace): RunSim attaches a recorder to its gate and closes
	// Record at the end of the run. Sim only.
	Record *trace.Writer
	// Transport is what a run's clients speak the protocol over, but for
	// the populations that name their own (behave.Population.Transport):
	// TransportTCP ("" too), TransportWS or TransportUDP. The in-process
	// server listens on TCP and on every other transport some population
	// speaks, and each client dials its population's; a Remote's Addr is
	// the address of the one transport every population must then speak.
	// The sim models each connection over its own transport
	// (SimConfig.Transports), but for the behaviours that write WebSocket
	// frames or UDP datagrams of their own, which run on the loopback
	// driver only.
	Transport string
	// Servers is the number of game servers (default 1; at most
	// MaxServers), with their own gates, that share the policy's fleet
	// section if it has one; Redis is where a loopback run's fleet keeps
	// its buckets. See loadgen/sim.Fleet and fleet_loopback.go.
	Servers int
	Redis   string
	// Network is the seeded loss and reorder model of the clients'
	// datagrams over transport udp (drive.Network); zero: none.
	Network drive.Network
}

// protocol returns the run's protocol.
func (s RunSpec) protocol() proto.Protocol {
	if s.Protocol == nil {
		return proto.Reference{}
	}
	return s.Protocol
}

// Remote is a running server for RunLoopback: its loopback address, and
// how to read its counters. RunLoopback reads them once before the run
// (everything it reports is the change from then, so a server may serve
// several runs, one at a time), at the end of each interval and of the
// warm-up, and at the end until the server has no more connections open
// than before the run, always from its own goroutine. Each read gets a
// context that ends after the run's reply timeout (at least a second):
// Stats should return when it ends. An error stops the run at once, and
// RunLoopback returns it. The server must count the run's populations
// apart: its MaxPopulations at least the plan's population count.
//
// A server that sluice did not start and cannot read (sluice run --target)
// leaves Stats nil: the run then measures what its clients saw alone (the
// replies, rejections and disconnects), Result.ServerView is false, and
// every input's fate is unknown (inputs get no reply). Such a server need
// not run on this machine: with AnyAddress set, Addr may be any address,
// and clients dial from the host's own address (the distinct 127.x.y.z
// source of each address group applies to loopback targets only, so a
// server elsewhere sees every client behind one address).
type Remote struct {
	Addr  netip.AddrPort
	Stats func(context.Context) (server.Stats, error)
	// AnyAddress allows an Addr outside the loopback range: set only for
	// an address the user named.
	AnyAddress bool
}

// Result is what a run measured.
type Result struct {
	// Labels are the populations' names, indexing everything below.
	Labels []string
	// Recorder holds the measured window only (after Warmup). Its Stats
	// cover the whole run.
	Recorder *record.Recorder
	// Series is [population][interval], over the whole run (warm-up
	// included); replies awaited after the end count in the last point.
	// A run that did not complete has the points up to Ran only: the
	// last is the one Ran falls in, and holds what was counted after it.
	Series [][]record.Interval
	// CutOffs are, per population, for each client the server
	// disconnected or locked out (in client order), the time from its
	// first write (its first dial, if it had written nothing) to the first
	// such moment.
	CutOffs [][]time.Duration
	// Clients is the number of clients per population.
	Clients []int
	// Active is, per population, the clients that took part: those that
	// dialled at least once. A client whose arrival (or first connect)
	// fell at or after the end of its window never does, and so was never
	// there to be cut off.
	Active []int
	// Disconnected and LockedOut count, per population, the distinct
	// clients the server disconnected (a Disconnect frame, or a close the
	// client did not ask for) and those it refused with reason Lockout (a
	// Disconnect or a Reply saying Lockout): what the clients saw.
	Disconnected, LockedOut []int64
	// Frames is the number of frames the server decoded (valid, malformed
	// or oversize, hellos included) over the whole run.
	Frames int64
	// ServerCPU is the server's own time: for loopback, its service time
	// on its monotonic clock (server.Stats ReadService + TickService: the
	// time spent decoding, in gate calls, queueing and ticking, not in
	// read system calls; process CPU would also count the in-process
	// clients); for sim, the wall time spent in the simulated server
	// (Sim.Busy). Neither is deterministic.
	ServerCPU time.Duration
	// ServerView is true when the run read the server's own counters (an
	// in-process server, or a Remote with Stats): its decisions on every
	// frame, Frames and ServerCPU. When false (a Remote without Stats) the
	// decisions are what the clients saw: replies to requests, rejections
	// and disconnects; inputs written are Sent, their fate unknown, and
	// Frames and ServerCPU are 0.
	ServerView bool
	// Complete is false when ctx was cancelled (or the run hit its hard
	// time bound): the Result holds what was measured until then.
	Complete bool
	// Ran is how far the run got on its own clock: the plan's Duration
	// when it ran to the end, else the time it was stopped at.
	Ran time.Duration
	// Server is the server's own view of a loopback run (see ServerView):
	// nil for RunSim, a remote server and NoLimits.
	Server *record.ServerView
	// Traces is what each trace replayed (sim and loopback; one per copy of each
	// trace, in the order of the plan's trace populations): its sessions,
	// frames, the records its recorder had lost, and, for a Partial
	// replay of a damaged trace, what the damage cost.
	Traces []sim.TraceStats
	// Servers is what each game server admitted, for a run of several
	// (RunSpec.Servers > 1); nil for one.
	Servers []record.ServerCounts
	// CookieReplays is what the udp-cookie-replay clients of a loopback
	// run sent from their replay sockets (zero otherwise).
	CookieReplays CookieReplays
}

// CookieReplays counts the handshakes udp-cookie-replay clients sent from
// their replay sockets (Replays, each with a real cookie the server had
// sent the client), and those written before the client had one (Unarmed,
// not sent).
type CookieReplays struct {
	Replays, Unarmed uint64
}

// hardSlack is how long past Duration + Timeout a loopback run may take
// before it is stopped as incomplete.
const hardSlack = 30 * time.Second

// normalize checks the spec and fills its defaults.
func (s RunSpec) normalize() (RunSpec, error) {
	if err := s.Plan.Validate(); err != nil {
		return s, err
	}
	cfg := s.Config.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return s, err
	}
	s.Config = cfg
	d := s.Plan.Duration
	if s.Interval == 0 {
		s.Interval = time.Second
	}
	tickRateSet := s.TickRate != 0
	if !tickRateSet {
		s.TickRate = server.DefaultTickRate
	}
	switch {
	case s.Warmup < 0 || s.Warmup >= d:
		return s, &behave.ParamError{Owner: "run", Field: "Warmup", Value: s.Warmup, Reason: "must be in [0, Duration)"}
	case s.Interval < 0:
		return s, &behave.ParamError{Owner: "run", Field: "Interval", Value: s.Interval, Reason: "must be positive"}
	case (d+s.Interval-1)/s.Interval > record.MaxIntervals:
		return s, &behave.ParamError{Owner: "run", Field: "Interval", Value: s.Interval, Reason: fmt.Sprintf("gives more than %d points over %v: make it at least %v", record.MaxIntervals, d, (d+record.MaxIntervals-1)/record.MaxIntervals)}
	case s.Workers < 0:
		return s, &behave.ParamError{Owner: "run", Field: "Workers", Value: s.Workers, Reason: "must not be negative"}
	case math.IsNaN(s.TickRate) || s.TickRate <= 0 || s.TickRate > 10000:
		return s, &behave.ParamError{Owner: "run", Field: "TickRate", Value: s.TickRate, Reason: "must be in (0, 10000] Hz"}
	case s.Remote != nil && (!s.Remote.Addr.IsValid() || s.Remote.Addr.Port() == 0):
		return s, &behave.ParamError{Owner: "run", Field: "Remote", Value: s.Remote.Addr, Reason: "must be an address with a port"}
	case s.Remote != nil && !s.Remote.AnyAddress && !s.Remote.Addr.Addr().Unmap().IsLoopback():
		return s, &behave.ParamError{Owner: "run", Field: "Remote", Value: s.Remote.Addr, Reason: "must be a loopback address with a port (AnyAddress allows another)"}
	case s.Protocol != nil && s.Protocol.Name() != proto.ReferenceName && s.Remote == nil:
		return s, &behave.ParamError{Owner: "run", Field: "Protocol", Value: s.Protocol.Name(), Reason: "is spoken only to a Remote server: the in-process server and the sim speak the reference protocol"}
	case drive.CheckTransport(s.Transport) != nil:
		return s, &behave.ParamError{Owner: "run", Field: "Transport", Value: s.Transport, Reason: drive.CheckTransport(s.Transport).Error()}
	case checkPopTransports(s) != nil:
		return s, checkPopTransports(s)
	case checkWSBehaviours(s) != nil:
		return s, checkWSBehaviours(s)
	case s.Remote != nil && s.NoLimits:
		return s, &behave.ParamError{Owner: "run", Field: "NoLimits", Value: s.NoLimits, Reason: "is the remote server's own setting"}
	case s.Remote != nil && tickRateSet:
		return s, &behave.ParamError{Owner: "run", Field: "TickRate", Value: s.TickRate, Reason: "is the remote server's own setting"}
	case checkServers(s) != nil:
		return s, checkServers(s)
	}
	s.Servers = max(s.Servers, 1)
	return s, nil
}

// serverMaxConns is the connection cap of a run's server: room for every
// client's connection and for closes still under way.
func serverMaxConns(clients int) int { return max(server.DefaultMaxConns, 2*clients+64) }

// CheckRun reports what would make RunSim or RunLoopback (with neither
// NoLimits nor Remote) refuse spec and p before running anything: the
// spec's bounds (its interval's number of points, its clients, its rates),
// the channels the behaviours send on, and a channel named as one of the
// server's own stats rows (which the loopback server refuses; refused here
// for either driver, so that a scenario runs on both). A scenario checks
// every variant with it before running the first.
func CheckRun(spec RunSpec, p core.Policy) error {
	if _, err := spec.normalize(); err != nil {
		return err
	}
	if err := server.CheckChannelNames(&p); err != nil {
		return err
	}
	_, err := behave.ChannelsOf(&p)
	return err
}

// RunSim runs spec in virtual time against a simulated server with policy
// p (see Sim), on one worker: the same spec, seed and policy give the same
// Result (ServerCPU aside; see Result.Canonical). The policy's channels
// named move, ability, chat and purchase carry those kinds (ChannelsOf).
// When ctx is cancelled it returns promptly what it measured, with
// Complete false and a nil error; errors are for a bad spec or policy.
func RunSim(ctx context.Context, spec RunSpec, p core.Policy) (*Result, error) {
	sp, err := spec.normalize()
	if err != nil {
		return nil, err
	}
	if sp.NoLimits {
		return nil, &behave.ParamError{Owner: "run", Field: "NoLimits", Value: true, Reason: "is for loopback runs only"}
	}
	if sp.Remote != nil {
		return nil, &behave.ParamError{Owner: "run", Field: "Remote", Value: sp.Remote.Addr, Reason: "is for loopback runs only"}
	}
	if err := checkSimBehaviours(sp); err != nil {
		return nil, err
	}
	chans, err := behave.ChannelsOf(&p)
	if err != nil {
		return nil, err
	}
	clients := sp.Plan.Clients()
	labels := sp.Plan.Labels()
	rec, err := record.NewRecorder(labels, record.HistConfig{})
	if err != nil {
		return nil, err
	}
	ser := record.NewSeries(len(labels), int64(sp.Interval), int64(sp.Plan.Duration))
	var w *drive.Worker
	cfg := sim.SimConfig{
		TickRate:        sp.TickRate,
		MaxConns:        serverMaxConns(len(clients)),
		Channels:        &chans,
		TableSeed:       behave.Mix64(sp.Plan.Seed ^ 0x7ab1e5eed),
		OnDecision:      func(pop int, k behave.Kind, o record.Outcome, at int64) { w.Decide(at, pop, k, o, 1) },
		OnClientOutcome: func(pop int, k behave.Kind, o record.Outcome, at int64) { w.Add(at, pop, k, o, 1) },
		Transport:       sp.Transport,
		Transports:      sp.popTransports(),
		Network:         sp.Network,
	}
	feeds, err := sim.TraceFeeds(&sp.Plan)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, f := range feeds {
			f.Close()
		}
	}()
	cfg.Traces = feeds
	var tr *trace.Recorder
	var recErr error
	if sp.Record != nil {
		buf, err := core.NewRecordBuffer(1 << 17)
		if err != nil {
			return nil, err
		}
		tr = trace.NewRecorder(buf, sp.Record, p, nil)
		cfg.Record, cfg.Labels = buf, labels
		for _, pop := range sp.Plan.Populations {
			cfg.Hostile = append(cfg.Hostile, pop.Hostile)
		}
		cfg.Drain = func() {
			if err := tr.Drain(); err != nil && recErr == nil {
				recErr = err
			}
		}
	}
	var simDriver simServer
	var count *record.Admitted
	if sp.Servers > 1 {
		count = record.NewAdmitted(sp.Servers, len(labels), sp.Warmup, sp.Interval, sp.Plan.Duration)
		simDriver, err = sim.NewFleet(p, cfg, clients, sp.Servers, count)
	} else {
		simDriver, err = sim.NewSim(p, cfg, clients)
	}
	if err != nil {
		return nil, err
	}
	w, err = drive.NewWorker(simDriver, rec, clients, sp.Config)
	if err != nil {
		return nil, err
	}
	w.SetChannels(chans)
	w.Warmup = int64(sp.Warmup)
	w.SetSeries(ser)
	w.UntilEnd = len(feeds) > 0
	total := sp.Plan.Duration
	if sp.Progress != nil {
		last := time.Now()
		w.OnLoop = func(now int64) {
			if time.Since(last) >= 100*time.Millisecond {
				last = time.Now()
				sp.Progress(min(time.Duration(now), total), total)
			}
		}
	}
	err = w.Run(ctx)
	complete := err == nil
	if err != nil && ctx.Err() == nil {
		return nil, err
	}
	if tr != nil {
		if err := tr.Close(); err != nil && recErr == nil {
			recErr = err
		}
		if recErr != nil {
			return nil, fmt.Errorf("loadgen: record: %w", recErr)
		}
	}
	for _, f := range feeds {
		if err := f.Err(); err != nil {
			return nil, err
		}
	}
	if complete && sp.Progress != nil {
		sp.Progress(total, total)
	}
	res := newResult(labels, rec, ser, []*drive.Worker{w}, complete, time.Duration(simDriver.Now()), total)
	res.ServerView = true
	res.Frames = simDriver.Frames()
	res.ServerCPU = simDriver.Busy()
	if count != nil {
		res.Servers = count.Servers
	}
	traced := map[int]int64{}
	for _, f := range feeds {
		st := f.Stats()
		res.Traces = append(res.Traces, st)
		for pop, n := range st.ByPopulation {
			traced[pop] += n
		}
	}
	for i, pop := range sp.Plan.Populations {
		if _, ok := pop.Behaviour.(*sim.Trace); ok {
			// Its clients are the traced sessions, not its placeholder.
			// None is Active: no client of its dialled, and no client
			// saw a cut-off (the server's decisions count it).
			res.Clients[i] = int(traced[i])
		}
	}
	return res, nil
}

// RunLoopback runs spec over real TCP sockets: it starts a loadgen/server
// with policy p on 127.0.0.1 (a free port), or drives spec.Remote's server
// (which it neither starts nor stops), runs the plan's clients on Workers
// workers (each client dialling from its address group's 127.x.y.z, see
// Loopback), and stops the server it started when they are done. The
// server's decisions (Recorder.Decisions and KindDecisions, the series'
// server outcomes) come from its per-population × channel counters
// (server.PopulationStats.Channels), read at each interval's end, at the
// end of the warm-up and at the end, after the server has closed every
// connection (so it has decided every frame it received): they are exact,
// with the sim's kinds (a channel of ChannelsOf's kind names is that kind,
// hellos KindHello, pings KindPing, frames on any other channel or on none
// KindRaw). The server counts a client's frames before its Hello under no
// population: those are in no Decisions. Progress is called from the
// caller's goroutine. When ctx is cancelled, or the run passes Duration +
// Timeout + 30s, it stops everything promptly and returns what it measured
// with Complete false; errors are for a bad spec or policy, a server that
// would not start, or a remote server whose counters could not be read.
// Every goroutine it starts has ended when it returns.
func RunLoopback(ctx context.Context, spec RunSpec, p core.Policy) (*Result, error) {
	sp, err := spec.normalize()
	if err != nil {
		return nil, err
	}
	if sp.Record != nil {
		return nil, &behave.ParamError{Owner: "run", Field: "Record", Value: "a trace", Reason: "is recorded by the sim driver only (sluice serve --record records a server)"}
	}
	chans, err := behave.ChannelsOf(&p)
	if err != nil {
		return nil, err
	}
	clients, demuxes, err := loopbackClients(&sp.Plan, &p) // traced sessions too: trace_loopback.go
	if err != nil {
		return nil, err
	}
	var traces []sim.TraceStats
	defer func() {
		if traces == nil {
			closeDemuxes(demuxes)
		}
	}()
	labels := sp.Plan.Labels()
	var (
		addr netip.AddrPort // the server's TCP listener; a Remote's only one
		// the in-process server's WebSocket and UDP listeners, when some
		// population speaks them (unset: addr, a Remote's)
		wsAddr, udpAddr netip.AddrPort
		stats           func(context.Context) (server.Stats, error)
		view            *record.ViewReads // the in-process server's gate, read for Result.Server
		fl              *fleetLoopback
	)
	if sp.Remote != nil {
		addr, stats = sp.Remote.Addr, sp.Remote.Stats
	} else if sp.Servers > 1 {
		if fl, err = startFleetLoopback(ctx, sp, p, server.Config{
			TickRate: sp.TickRate, MaxConns: serverMaxConns(len(clients)), MaxPopulations: max(server.DefaultMaxPopulations, len(labels)),
		}); err != nil {
			return nil, err
		}
		defer fl.close()
		addr, stats = fl.addr(), fl.stats
	} else {
		srv, err := server.New(server.Config{
			Policy:         p,
			TickRate:       sp.TickRate,
			MaxConns:       serverMaxConns(len(clients)),
			MaxPopulations: max(server.DefaultMaxPopulations, len(labels)),
			NoLimits:       sp.NoLimits,
			WebSocket:      wsListen(sp),
			UDP:            udpListen(sp),
		})
		if err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		if !sp.NoLimits {
			var remove func()
			view, remove = record.NewViewReads(srv.Gate(), &p, labels)
			defer remove()
		}
		if err := srv.Start(); err != nil {
			return nil, fmt.Errorf("loadgen: %w", err)
		}
		defer srv.Close()
		addr, stats = srv.Addr(), func(context.Context) (server.Stats, error) { return srv.Stats(), nil }
		if sp.uses(drive.TransportWS) {
			wsAddr = srv.WSAddr()
		}
		if sp.uses(drive.TransportUDP) {
			udpAddr = srv.UDPAddr()
		}
	}

	nw := sp.Workers
	if nw == 0 {
		nw = runtime.GOMAXPROCS(0)
	}
	parts := behave.Split(clients, min(nw, len(clients)))
	total := sp.Plan.Duration
	rctx, cancel := context.WithTimeout(ctx, total+sp.Config.Timeout+hardSlack)
	defer cancel()
	ser := record.NewSeries(len(labels), int64(sp.Interval), int64(total))
	rt := drive.NewRealTime()
	if fl != nil {
		fl.rt = rt
	}
	workers := make([]*drive.Worker, len(parts))
	drivers := make([]*loopback.Loopback, len(parts))
	recs := make([]*record.Recorder, len(parts))
	for i, part := range parts {
		if recs[i], err = record.NewRecorder(labels, record.HistConfig{}); err != nil {
			return nil, err
		}
		if drivers[i], err = loopback.NewSocketDriver(rctx, addr, rt.Clone(), sp.Config.Timeout, sp.Remote != nil && sp.Remote.AnyAddress, sp.protocol()); err != nil {
			return nil, err
		}
		if fl != nil {
			drivers[i].Fleet = &loopback.LoopFleet{Addrs: fl.addrs, WSAddrs: fl.wsAddrs, UDPAddrs: fl.udpAddrs, Route: drive.NewServerRoute(sp.Servers, part)}
		}
		drivers[i].Transports = sp.clientTransports(part)
		drivers[i].WSAddr, drivers[i].UDPAddr = wsAddr, udpAddr
		if sp.uses(drive.TransportUDP) {
			drivers[i].UDPRaw = loopback.UDPRawModes(part)
			drivers[i].Net, drivers[i].Seeds = sp.Network, drive.ClientSeeds(part)
		}
		if sp.uses(drive.TransportWS) {
			drivers[i].WSRaw = loopback.WSDialModes(part)
		}
		if workers[i], err = drive.NewWorker(drivers[i], recs[i], part, sp.Config); err != nil {
			return nil, err
		}
		w := workers[i]
		w.SetChannels(chans)
		w.SetProtocol(sp.protocol())
		w.Warmup = int64(sp.Warmup)
		w.ClientView = stats == nil
		w.SetSeries(ser)
	}

	mon := newMonitor(rctx, cancel, stats, max(sp.Config.Timeout, time.Second), labels, channelKinds(&p, chans), ser, int64(sp.Warmup))
	mon.view = view
	if mon.begin(); mon.err != nil {
		return nil, fmt.Errorf("loadgen: reading the server's counters: %w", mon.err)
	}
	// Time 0 is now, once every worker is ready.
	rt.Start = time.Now()
	for _, d := range drivers {
		d.Rt.Start = rt.Start
	}
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = workers[i].Run(rctx)
			drivers[i].Stop()
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	// The monitor runs on the caller's goroutine, so Progress is called
	// from it only.
	mon.run(rt, done, total, sp.Progress)
	ran := time.Duration(rt.Now()) // how far the run got, if it did not complete

	complete := true
	for _, err := range errs {
		if err != nil {
			if rctx.Err() == nil {
				return nil, err
			}
			complete = false
		}
	}
	rec, err := record.MergeAll(recs...)
	if err != nil {
		return nil, err
	}
	if complete {
		// Every client has closed its connections; the server reads what
		// is left in them before it sees the close. Its last decisions
		// count once it has.
		waitClosed(rctx, mon, sp.Config.Timeout+time.Second)
	}
	st := mon.finish(rt.Now(), rec)
	if mon.err != nil {
		return nil, fmt.Errorf("loadgen: reading the server's counters: %w", mon.err)
	}
	if complete && sp.Progress != nil {
		sp.Progress(total, total)
	}
	res := newResult(labels, rec, ser, workers, complete, ran, total)
	res.ServerView = stats != nil
	res.Frames = int64(st.Frames - mon.base.Frames)
	res.ServerCPU = st.ReadService + st.TickService - mon.base.ReadService - mon.base.TickService
	if view != nil {
		res.Server = view.View(st, complete)
	}
	if fl != nil {
		res.Servers = fl.counts(labels, channelKinds(&p, chans), sp.Warmup, sp.Interval, total)
	}
	for _, d := range drivers {
		r := d.CookieReplays()
		res.CookieReplays.Replays += r.Replays
		res.CookieReplays.Unarmed += r.Unarmed
	}
	if demuxes != nil {
		traces = closeDemuxes(demuxes)
		res.Traces = traces
	}
	return res, nil
}

// monitor reads the server's per-population × channel counters into the
// series at each interval's end, keeps the counts at the end of the
// warm-up, and calls Progress.
type monitor struct {
	ctx         context.Context
	cancel      context.CancelFunc // stops the run when stats fails
	stats       func(context.Context) (server.Stats, error)
	readTimeout time.Duration // the bound on one read of stats
	err         error         // the first error of stats; the snapshots after it are empty
	base        server.Stats  // the counters before the run
	labels      []string
	kinds       map[string]behave.Kind // channel row name -> kind (absent: KindRaw)
	ser         *record.Series
	warmup      int64
	prev        []kindCounts // per population, at the last read
	warm        []kindCounts // at the end of the warm-up
	next        int          // the interval whose end is the next read
	warmed      bool
	view        *record.ViewReads // if set, given the reads that start the run and the window
}

// kindCounts are one population's server decisions by kind and outcome.
type kindCounts [behave.NumKinds][record.NumOutcomes]int64

func newMonitor(ctx context.Context, cancel context.CancelFunc, stats func(context.Context) (server.Stats, error), statsTimeout time.Duration, labels []string, kinds map[string]behave.Kind, ser *record.Series, warmup int64) *monitor {
	return &monitor{ctx: ctx, cancel: cancel, stats: stats, readTimeout: statsTimeout, labels: labels, kinds: kinds, ser: ser, warmup: warmup,
		prev: make([]kindCounts, len(labels)), warm: make([]kindCounts, len(labels)), warmed: warmup == 0}
}

// channelKinds maps the server's channel rows to kinds: the channels
// ChannelsOf names (chans), hellos and pings; every other row (another
// policy channel, unknown) is KindRaw, as in the sim.
func channelKinds(p *core.Policy, chans behave.Channels) map[string]behave.Kind {
	m := map[string]behave.Kind{server.ChannelHello: behave.KindHello, server.ChannelPing: behave.KindPing}
	for k, i := range chans {
		if i >= 0 && i < len(p.Channels) {
			m[p.Channels[i].Name] = behave.Kind(k)
		}
	}
	return m
}

// kindDecisionsOf converts one population's server counters into outcomes
// by kind.
func kindDecisionsOf(ps server.PopulationStats, kinds map[string]behave.Kind) (out kindCounts) {
	for name, cs := range ps.Channels {
		k, ok := kinds[name]
		if !ok {
			k = behave.KindRaw
		}
		out[k][record.Accepted] += int64(cs.Accepted)
		for _, m := range []map[string]uint64{cs.Dropped, cs.Rejected} {
			for name, n := range m {
				if r, err := core.ParseReason(name); err == nil && r != core.None && int(r) < record.ServerReasons {
					out[k][r] += int64(n)
				}
			}
		}
	}
	return out
}

// read takes a snapshot and adds what changed since the last one to point
// k of the series.
func (m *monitor) read(k int) server.Stats {
	st := m.snapshot()
	if m.err != nil {
		return st
	}
	for pop, label := range m.labels {
		cur := kindDecisionsOf(st.Populations[label], m.kinds)
		var d record.Interval
		for kind := range cur {
			for o := range cur[kind] {
				d.Outcomes[o] += cur[kind][o] - m.prev[pop][kind][o]
			}
		}
		d.Accepted = d.Outcomes[record.Accepted]
		m.ser.Add(pop, k, &d, nil)
		m.prev[pop] = cur
	}
	return st
}

// snapshot reads the server's counters. On an error (kept in m.err) it
// stops the run, and reads nothing more.
func (m *monitor) snapshot() server.Stats {
	if m.err != nil || m.stats == nil { // a server it cannot read: nothing to read
		return server.Stats{}
	}
	// A read is bounded on its own, not by the run's context: the reads
	// that end a cancelled or timed-out run must still succeed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), m.readTimeout)
	st, err := m.stats(ctx)
	cancel()
	if err != nil {
		m.err = err
		m.cancel()
		return server.Stats{}
	}
	return st
}

// begin reads the counters before the run: the baseline every later
// read is measured from (a remote server may have served before).
func (m *monitor) begin() {
	m.base = m.snapshot()
	for pop, label := range m.labels {
		m.prev[pop] = kindDecisionsOf(m.base.Populations[label], m.kinds)
	}
	m.view.AtBase(m.base)
	if m.warmed { // no warm-up: the measured window starts now
		copy(m.warm, m.prev)
		m.view.AtWarm(m.base)
	}
}

// run reads the server's counters at each interval's end and at the end
// of the warm-up, and calls progress about every 100ms, until done.
func (m *monitor) run(rt *drive.RealTime, done <-chan struct{}, total time.Duration, progress func(done, total time.Duration)) {
	const every = int64(100 * time.Millisecond)
	n := len(m.ser.Pts[0])
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	nextProgress := every
	for {
		next := nextProgress
		if m.next < n-1 {
			next = min(next, int64(m.next+1)*m.ser.Width)
		}
		if !m.warmed {
			next = min(next, m.warmup)
		}
		timer.Reset(time.Duration(max(next-rt.Now(), 0)))
		select {
		case <-done:
			return
		case <-timer.C:
		}
		now := rt.Now()
		for m.next < n-1 && now >= int64(m.next+1)*m.ser.Width {
			m.read(m.next)
			m.next++
		}
		if !m.warmed && now >= m.warmup {
			m.warmed = true
			m.view.AtWarm(m.read(m.ser.Index(now)))
			copy(m.warm, m.prev)
		}
		if now >= nextProgress {
			nextProgress = now + every
			if progress != nil {
				progress(min(time.Duration(now), total), total)
			}
		}
	}
}

// finish takes the last snapshot, adds the measured window's decisions to
// rec by kind, and returns the snapshot.
func (m *monitor) finish(now int64, rec *record.Recorder) server.Stats {
	st := m.read(m.ser.Index(now))
	if !m.warmed { // stopped before the end of the warm-up: nothing measured
		copy(m.warm, m.prev)
		m.view.AtWarm(st)
	}
	for pop := range m.labels {
		for k := range behave.NumKinds {
			for o := range record.ServerReasons {
				if n := m.prev[pop][k][o] - m.warm[pop][k][o]; n != 0 {
					rec.AddDecision(pop, k, record.Outcome(o), n)
				}
			}
		}
	}
	return st
}

// waitClosed waits until the server has no more connections open than
// before the run, at most d or until ctx ends or its counters cannot be
// read.
func waitClosed(ctx context.Context, m *monitor, d time.Duration) {
	deadline := time.Now().Add(d)
	for m.snapshot().Conns.Open > m.base.Conns.Open && m.err == nil && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
}

type cutOff struct {
	client int
	d      time.Duration
}

// newResult gathers the workers' results of a run of the plan Duration
// total that stopped at ran on its clock (complete: at the end).
func newResult(labels []string, rec *record.Recorder, ser *record.Series, workers []*drive.Worker, complete bool, ran, total time.Duration) *Result {
	n := len(labels)
	if complete {
		ran = total
	} else {
		ser.Truncate(int64(min(ran, total)))
	}
	res := &Result{
		Ran:          min(ran, total),
		Labels:       slices.Clone(labels),
		Recorder:     rec,
		Series:       ser.Pts,
		CutOffs:      make([][]time.Duration, n),
		Clients:      make([]int, n),
		Active:       make([]int, n),
		Disconnected: make([]int64, n),
		LockedOut:    make([]int64, n),
		Complete:     complete,
	}
	cuts := make([][]cutOff, n)
	for _, w := range workers {
		for i := range w.Clients {
			cs := &w.Clients[i]
			pop := cs.C.Population
			res.Clients[pop]++
			if cs.FirstDial >= 0 {
				res.Active[pop]++
			}
			if cs.Disconnected {
				res.Disconnected[pop]++
			}
			if cs.Locked {
				res.LockedOut[pop]++
			}
			if cs.Cut >= 0 {
				from := cs.FirstDial
				if cs.FirstSend >= 0 && cs.FirstSend <= cs.Cut {
					from = cs.FirstSend
				}
				cuts[pop] = append(cuts[pop], cutOff{cs.C.Index, time.Duration(cs.Cut - max(from, 0))})
			}
		}
	}
	for pop, cs := range cuts {
		slices.SortFunc(cs, func(a, b cutOff) int { return a.client - b.client })
		res.CutOffs[pop] = make([]time.Duration, len(cs))
		for i, c := range cs {
			res.CutOffs[pop][i] = c.d
		}
	}
	return res
}

// ErrNoResult is returned by Canonical for a nil Result or one without a
// Recorder.
var ErrNoResult = errors.New("loadgen: no result")

// Canonical returns a byte encoding of everything the run measured except
// ServerCPU (a wall time) and the per-kind split of the server's decisions
// (KindDecisions; the per-population decisions are in) and the server's
// view (Server, loopback only): the labels, every
// count (outcomes, decisions, bytes and frames written, clamped and dropped values, the
// workers' Stats), every histogram (its geometry and non-zero counts), the
// series, the cut-offs, the clients and those active, the disconnected
// and locked-out counts, the frames and whether the run completed. Two sim runs of the
// same spec, seed and policy give equal encodings.
func (r *Result) Canonical() ([]byte, error) {
	if r == nil || r.Recorder == nil {
		return nil, ErrNoResult
	}
	var b []byte
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	num := func(v int64) { b = binary.AppendVarint(b, v) }
	hist := func(h *hdrhistogram.Histogram) {
		if h == nil {
			num(-1)
			return
		}
		s := h.Export()
		num(s.LowestTrackableValue)
		num(s.HighestTrackableValue)
		num(s.SignificantFigures)
		num(h.TotalCount())
		for i, c := range s.Counts {
			if c != 0 {
				num(int64(i))
				num(c)
			}
		}
		num(-1)
	}
	// A series point's packed histogram is encoded as the dense one of
	// its counts (the same bytes as when the series kept dense ones).
	dense := record.NewSeriesHistogram()
	var lost int64 // response times a series point could not hold
	point := func(pt *record.Interval) {
		lost += pt.ResponseInto(dense)
		if pt.Response == nil {
			hist(nil)
			return
		}
		hist(dense)
	}
	num(int64(len(r.Labels)))
	for _, l := range r.Labels {
		str(l)
	}
	rec := r.Recorder
	rec.Flush() // runs of equal values the recorder still holds
	for _, l := range rec.Labels() {
		str(l)
	}
	num(rec.Cfg.Lowest)
	num(rec.Cfg.Highest)
	num(int64(rec.Cfg.Digits))
	st := rec.Stats
	// Not Overdue: virtual time never falls behind its schedule, so in
	// the sim it is always 0 (TestSimGolden holds it).
	for _, v := range []int64{st.Actions, st.Skipped, st.Events, st.Unmatched, st.Stopped} {
		num(v)
	}
	for i := range rec.Pops {
		p := &rec.Pops[i]
		for _, v := range p.Decisions() {
			num(v)
		}
		for k := range behave.NumKinds {
			num(p.Bytes[k])
			num(p.Written[k])
			for _, v := range p.Outcomes[k] {
				num(v)
			}
			for m := range record.NumMetrics {
				num(p.Clamped[k][m])
				num(p.Dropped[k][m])
				hist(p.Hist[k][m])
			}
		}
	}
	num(int64(len(r.Series)))
	for _, pts := range r.Series {
		num(int64(len(pts)))
		for _, pt := range pts {
			num(int64(pt.Start))
			num(pt.Sent)
			num(pt.Accepted)
			for _, v := range pt.Outcomes {
				num(v)
			}
			point(&pt)
		}
	}
	num(int64(len(r.CutOffs)))
	for _, cs := range r.CutOffs {
		num(int64(len(cs)))
		for _, c := range cs {
			num(int64(c))
		}
	}
	for _, v := range r.Clients {
		num(int64(v))
	}
	for _, v := range r.Active {
		num(int64(v))
	}
	for _, v := range r.Disconnected {
		num(v)
	}
	for _, v := range r.LockedOut {
		num(v)
	}
	num(r.Frames)
	if r.Complete {
		num(1)
	} else {
		num(0)
	}
	if lost != 0 {
		return nil, fmt.Errorf("loadgen: the series lost %d response times", lost)
	}
	return b, nil
}
