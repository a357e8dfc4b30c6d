package metrics

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicedev/sluice/core"
)

// The events a security log writes, its records' messages.
const (
	EventFlood      = "flood"      // a session's transport-level drops of one reason (FloodEvent)
	EventLockout    = "lockout"    // a strike score rose into the lockout stage
	EventDisconnect = "disconnect" // a decision said Disconnect, or a strike score rose into the disconnect stage
	EventTableFull  = "table_full" // a keyed layer refused a session's message: its table was full
)

// SecurityEvent is one record of the security log: what the gate reported
// about one session for one event and reason during one interval, the
// reports coalesced. It never holds a byte of a payload.
type SecurityEvent struct {
	Event   string       // EventFlood, EventLockout, EventDisconnect or EventTableFull
	Session core.Session // the gate's session handle
	Account uint64       // 0 before authentication
	// Source is the source the gate keys the session by (an IPv4 address
	// as a /32, an IPv6 /64), invalid when the session had already closed
	// when the first report of the record came (the last flood report of
	// a session comes from its Close).
	Source  netip.Prefix
	Reason  core.Reason
	Channel string // the channel of a disconnect or table-full decision, if any
	Stage   core.StrikeStage
	// Reports is the number of gate reports folded into the record; Count
	// the messages they cover (a flood report covers many drops).
	Reports uint64
	Count   uint64
	Bytes   uint64 // floods: the bytes of the dropped messages
	Largest uint32 // floods: the largest dropped message
	Budget  uint64 // floods: the limit behind the reason (FloodEvent.Budget)
}

// SecurityLogOptions configure a SecurityLog. The zero value is the
// default.
type SecurityLogOptions struct {
	// Interval is the coalescing window: the log writes at most one record
	// per session, event and reason per interval, at its end, counting the
	// reports folded in. Default 1s.
	Interval time.Duration
	// Buffer is how many reports may wait for the writer (rounded up to a
	// power of two); a report that finds the buffer full is dropped and
	// counted, never waited for. The writer empties it every 10ms (or
	// every Interval, if shorter). Default 4096.
	Buffer int
	// Sample, when not nil, is asked about every coalesced record just
	// before it is written, on the writer's goroutine; false drops the
	// record (counted). EveryNth is one sampler.
	Sample func(SecurityEvent) bool
}

// EveryNth returns a sampler that keeps the first record of each event and
// reason and then one in n (n ≤ 1 keeps all). It is meant for one
// SecurityLog: call it once per log.
func EveryNth(n uint64) func(SecurityEvent) bool {
	seen := map[[2]string]uint64{}
	return func(e SecurityEvent) bool {
		if n <= 1 {
			return true
		}
		k := [2]string{e.Event, e.Reason.String()}
		i := seen[k]
		seen[k] = i + 1
		return i%n == 0
	}
}

// SecurityLogStats counts what a SecurityLog did with the reports it was
// given.
type SecurityLogStats struct {
	Reports       uint64 // reports the gate gave that the log writes about
	BufferFull    uint64 // of those, dropped because the buffer was full
	Written       uint64 // records handed to the handler that it took without error or panic
	Sampled       uint64 // records the sampler dropped
	Disabled      uint64 // records below the handler's level
	HandlerErrors uint64 // records whose Handle returned an error
	HandlerPanics uint64 // records whose Handle panicked (recovered)
}

// SecurityLog is a gate observer that writes the events naming a player
// (floods, lockouts, disconnects and table-full refusals, with session,
// account and source) to a log/slog handler, coalesced per session, event
// and reason per interval and optionally sampled. It is fail-open: the
// observer only hands each report to a bounded lock-free buffer, without
// waiting (a full buffer drops the report and counts it); one goroutine of the
// log's own coalesces and calls the handler, recovering its panics, so a
// handler that blocks or panics changes no decision and delays no
// message. It reads nothing of a message but what the gate's events carry:
// no payload byte ever reaches it.
//
// Make one with NewSecurityLog and stop it with Close; the zero value is
// not usable. It is safe for concurrent use, and is a prometheus.Collector
// of its own counters.
type SecurityLog struct {
	g      *core.Gate
	h      slog.Handler
	opts   SecurityLogOptions
	remove func()
	in     *ring
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	reports, bufferFull, written, sampled, disabled, errs, panics atomic.Uint64

	descReports, descDropped, descWritten *prometheus.Desc
}

// NewSecurityLog attaches a security log to g, writing to h, and starts
// its writer.
func NewSecurityLog(g *core.Gate, h slog.Handler, opts SecurityLogOptions) *SecurityLog {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 4096
	}
	l := &SecurityLog{
		g: g, h: h, opts: opts,
		in:   newRing(opts.Buffer),
		stop: make(chan struct{}),
		done: make(chan struct{}),
		descReports: prometheus.NewDesc("sluice_security_log_reports_total",
			"Gate reports the security log was given to write about.", nil, nil),
		descDropped: prometheus.NewDesc("sluice_security_log_dropped_total",
			"Reports or records the security log did not write, by why: buffer_full (the writer was behind), sampled, disabled (below the log level), handler_error, handler_panic.", []string{"why"}, nil),
		descWritten: prometheus.NewDesc("sluice_security_log_records_total",
			"Records the security log's handler took.", nil, nil),
	}
	go l.run()
	l.remove = g.Observe(core.GateObserver{RateLimited: l.rateLimited, Flood: l.flood, Strike: l.strike})
	return l
}

// offer hands one report to the writer without waiting or locking.
func (l *SecurityLog) offer(e SecurityEvent) {
	l.reports.Add(1)
	if !l.in.push(&e) {
		l.bufferFull.Add(1)
	}
}

func (l *SecurityLog) source(h core.Session) netip.Prefix {
	p, _ := l.g.SessionSource(h)
	return p
}

func (l *SecurityLog) rateLimited(e core.RateLimitedEvent) {
	var ev string
	switch {
	case e.Action == core.Disconnect:
		ev = EventDisconnect
	case e.Reason == core.TableFull:
		ev = EventTableFull
	default:
		return
	}
	l.offer(SecurityEvent{Event: ev, Session: e.Session, Account: e.Account, Source: l.source(e.Session), Reason: e.Reason, Channel: e.Channel, Reports: 1, Count: 1})
}

func (l *SecurityLog) flood(e core.FloodEvent) {
	l.offer(SecurityEvent{Event: EventFlood, Session: e.Session, Account: e.Account, Source: l.source(e.Session), Reason: e.Reason,
		Reports: 1, Count: e.Count, Bytes: e.Bytes, Largest: e.Largest, Budget: e.Budget})
}

func (l *SecurityLog) strike(e core.StrikeEvent) {
	var ev string
	switch e.Stage {
	case core.StageLockout:
		ev = EventLockout
	case core.StageDisconnect:
		ev = EventDisconnect
	default:
		return
	}
	l.offer(SecurityEvent{Event: ev, Session: e.Session, Account: e.Account, Source: l.source(e.Session), Reason: e.Reason, Stage: e.Stage, Reports: 1, Count: 1})
}

// coalesceKey is what one record of an interval is about.
type coalesceKey struct {
	event   string
	session core.Session
	reason  core.Reason
}

// drainEvery is how often the writer empties the buffer, at most.
const drainEvery = 10 * time.Millisecond

// run is the writer: it empties the buffer every drainEvery, folds the
// reports into the interval's records and writes them when the interval
// ends, and once more on Close.
func (l *SecurityLog) run() {
	defer close(l.done)
	t := time.NewTicker(min(l.opts.Interval, drainEvery))
	defer t.Stop()
	last := time.Now()
	pending := map[coalesceKey]*SecurityEvent{}
	var order []coalesceKey
	fold := func(e SecurityEvent) {
		k := coalesceKey{e.Event, e.Session, e.Reason}
		p := pending[k]
		if p == nil {
			pending[k] = &e
			order = append(order, k)
			return
		}
		p.Reports += e.Reports
		p.Count += e.Count
		p.Bytes += e.Bytes
		p.Largest = max(p.Largest, e.Largest)
		p.Stage = max(p.Stage, e.Stage)
		if e.Budget != 0 {
			p.Budget = e.Budget
		}
		if p.Account == 0 {
			p.Account = e.Account
		}
		if !p.Source.IsValid() {
			p.Source = e.Source
		}
		if p.Channel == "" {
			p.Channel = e.Channel
		}
	}
	flush := func() {
		for _, k := range order {
			l.write(pending[k])
		}
		clear(pending)
		order = order[:0]
	}
	drain := func() {
		var e SecurityEvent
		for l.in.pop(&e) {
			fold(e)
		}
	}
	for {
		select {
		case now := <-t.C:
			drain()
			if now.Sub(last) >= l.opts.Interval {
				last = now
				flush()
			}
		case <-l.stop:
			drain()
			flush()
			return
		}
	}
}

// levels are the records' levels by event.
var levels = map[string]slog.Level{
	EventFlood:      slog.LevelInfo,
	EventDisconnect: slog.LevelWarn,
	EventLockout:    slog.LevelWarn,
	EventTableFull:  slog.LevelError,
}

// write samples one record and hands it to the handler, recovering a
// panic.
func (l *SecurityLog) write(e *SecurityEvent) {
	if l.opts.Sample != nil && !l.opts.Sample(*e) {
		l.sampled.Add(1)
		return
	}
	ctx := context.Background()
	lvl := levels[e.Event]
	if !l.h.Enabled(ctx, lvl) {
		l.disabled.Add(1)
		return
	}
	r := slog.NewRecord(time.Now(), lvl, "sluice security: "+e.Event, 0)
	r.AddAttrs(
		slog.String("event", e.Event),
		slog.Uint64("session", uint64(e.Session)),
		slog.Uint64("account", e.Account),
	)
	if e.Source.IsValid() {
		r.AddAttrs(slog.String("source", e.Source.String()))
	}
	r.AddAttrs(slog.String("reason", e.Reason.String()))
	if e.Channel != "" {
		r.AddAttrs(slog.String("channel", e.Channel))
	}
	if e.Stage != core.StageNone {
		r.AddAttrs(slog.String("stage", e.Stage.String()))
	}
	r.AddAttrs(slog.Uint64("reports", e.Reports), slog.Uint64("count", e.Count))
	if e.Event == EventFlood {
		r.AddAttrs(slog.Uint64("bytes", e.Bytes), slog.Uint64("largest", uint64(e.Largest)), slog.Uint64("budget", e.Budget))
	}
	r.AddAttrs(slog.Duration("window", l.opts.Interval))
	defer func() {
		if recover() != nil {
			l.panics.Add(1)
		}
	}()
	if err := l.h.Handle(ctx, r); err != nil {
		l.errs.Add(1)
		return
	}
	l.written.Add(1)
}

// Close removes the observer from the gate, writes what is pending and
// stops the writer. It waits for the writer until ctx is done, and then
// returns ctx's error: a handler that blocks keeps the writer (and only
// it) until the handler returns.
func (l *SecurityLog) Close(ctx context.Context) error {
	l.once.Do(func() {
		l.remove()
		close(l.stop)
	})
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stats returns the log's counters.
func (l *SecurityLog) Stats() SecurityLogStats {
	return SecurityLogStats{
		Reports: l.reports.Load(), BufferFull: l.bufferFull.Load(), Written: l.written.Load(),
		Sampled: l.sampled.Load(), Disabled: l.disabled.Load(), HandlerErrors: l.errs.Load(), HandlerPanics: l.panics.Load(),
	}
}

// Describe sends the descriptors of the log's own series.
func (l *SecurityLog) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.descReports
	ch <- l.descDropped
	ch <- l.descWritten
}

// Collect sends the log's counters.
func (l *SecurityLog) Collect(ch chan<- prometheus.Metric) {
	s := l.Stats()
	ch <- prometheus.MustNewConstMetric(l.descReports, prometheus.CounterValue, float64(s.Reports))
	ch <- prometheus.MustNewConstMetric(l.descWritten, prometheus.CounterValue, float64(s.Written))
	for _, d := range []struct {
		why string
		n   uint64
	}{{"buffer_full", s.BufferFull}, {"sampled", s.Sampled}, {"disabled", s.Disabled}, {"handler_error", s.HandlerErrors}, {"handler_panic", s.HandlerPanics}} {
		ch <- prometheus.MustNewConstMetric(l.descDropped, prometheus.CounterValue, float64(d.n), d.why)
	}
}
