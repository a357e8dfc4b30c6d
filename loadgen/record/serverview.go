package record

import (
	"sync/atomic"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/server"
)

// The rows of core.GateStats beyond the policy's channels.
const (
	gateRowUnknown   = "(unknown)"   // Check of a frame naming no channel
	gateRowTransport = "(transport)" // Gate.Read, one per read
	gateRowSession   = "(session)"   // Open and Authenticate
)

// ServerView is the server's own account of a loopback run: what its gate
// counted (core.GateStats, the counters metrics.GateCollector exports),
// beside the per-population decisions the harness records, and whether
// the two agree where they count the same thing (Check).
//
// RunLoopback fills it for the server it starts; it is nil for a remote
// server, a NoLimits run (no gate) and RunSim. A plain value, not safe for
// concurrent mutation.
type ServerView struct {
	// Window is the change of the gate's counters over the measured window
	// (from the read at the end of the warm-up to the last read, after the
	// server closed every connection): the window of Recorder.Decisions.
	Window GateCounts
	// Check compares the gate's counts with the server's per-population
	// counters over the whole run.
	Check ViewCheck
}

// GateCounts are a gate's counters over a span: reason-keyed maps use the
// core.Reason names ("None" counts accepted messages) and hold non-zero
// counts only.
type GateCounts struct {
	// Messages counts decisions by gate row (a policy channel, or
	// "(unknown)", "(transport)", "(session)": see core.GateStats.Kinds)
	// and reason.
	Messages map[string]map[string]int64
	// Actions counts decisions by the action decided.
	Actions map[string]int64
	// Floods and FloodBytes are the gate's transport-level drops and
	// their bytes by reason, summed from its coalesced flood reports
	// (made at each Step and at a session's Close); FloodsTotal is the
	// gate's own total of the drops (GateStats.TransportFloods), counted
	// as they happen. Over a whole run, once every session has closed,
	// the reports add up to it; over a window they may trail it by the
	// drops of the window's last tick.
	Floods, FloodBytes map[string]int64
	FloodsTotal        int64
	// StageRises counts rises of strike scores into each stage
	// (core.StrikeStage names).
	StageRises map[string]int64
	// Lockouts counts lockouts the strike ladder imposed; TableFull the
	// decisions refused because a table was full (reason TableFull, in
	// any row); Shadowed the messages accepted only because of shadow
	// mode.
	Lockouts, TableFull, Shadowed int64
}

// ViewCheck is the comparison of the gate's counts with the server's
// per-population counters (server.PopulationStats.Channels, which the
// harness reads its decisions from) over the whole run: from the read
// before the first client dialled to the last one, after the server had
// closed every connection. Both ends are quiescent, so every frame the
// server counted was decided by the gate before it: the counts are exact.
// The measured window is not compared: its first read is taken under
// load, where the gate counts a frame before the server's tally of the
// read publishes it.
//
// Comparable, row by row (ViewRow.Compared):
//   - A policy channel's gate row against the server's row of the same
//     channel, summed over every population (with the server's "(ping)"
//     row added to the ping channel's, on which the server checks pings),
//     reason by reason, except that the server's own refusals of a
//     message the gate accepted (QueueFull: the tick queue was full;
//     Closed: shutting down) count as accepted by the gate. So None,
//     QueueFull and Closed are compared as one sum; the gate itself says
//     QueueFull for a request whose pending slots are taken.
//   - Malformed and Oversize: the gate's "(unknown)" row (the server
//     checks undecodable frames, server-to-client types, channels past
//     the policy's, and Hellos after the first under no channel) plus its
//     "(session)" row (Authenticate's Malformed) against the server's
//     "(unknown)" and "(hello)" rows. Any other reason in the server's
//     "(unknown)" row is compared with the gate's "(unknown)", which holds
//     none.
//
// Shown, not compared:
//   - ByteLimit in the server's rows: frames of a read the byte budget
//     refused, counted per frame in the row each frame names; the gate
//     counts that refusal once per read, in "(transport)". Every read the
//     server checks is charged there (core.FlagCharged), so Check never
//     says ByteLimit.
//   - The gate's "(transport)" row (one decision per read, which the
//     server does not count) and its "(session)" row but for Malformed:
//     it counts each Open, which has no frame and, coming before the
//     Hello, no population, beside each Authenticate, whose decision the
//     server counts in "(hello)" (shown against it).
//   - The server's "(ping)" row when the policy has no ping channel: its
//     own bucket, no gate call.
//
// A client's frames before its Hello count in the server's population
// "(none)" (and a label it could not keep in "(other)"): the harness
// attributes them to no population. They are BeforeHello here, so a row
// agrees when Gate = Populations + BeforeHello. A Read or Authenticate
// saying NoSession, which the server would count differently, cannot
// happen: a connection's session is open from its Open until its reader
// has ended.
type ViewCheck struct {
	// Made is false when no exact comparison was possible; Why says why
	// (the run stopped early, a connection was still open at the last
	// read, shadow mode).
	Made bool
	Why  string
	// Agree is true when every compared row agrees (Made only).
	Agree bool
	// Rows are the comparison's rows: the policy's channels in order,
	// then the others, the compared reasons before those shown only.
	Rows []ViewRow
}

// ViewRow is one count as the gate and as the server counted it.
type ViewRow struct {
	// Gate and Server name the rows summed on each side (a row of
	// core.GateStats.Kinds; a row of server.PopulationStats.Channels),
	// joined by "+"; Reason the reasons, joined by "+".
	Gate, Server, Reason string
	// GateCount is the gate's count; Populations the server's over the
	// run's populations, BeforeHello over "(none)" and "(other)".
	GateCount, Populations, BeforeHello int64
	// Compared says the row is one of the comparable counts; Note, for a
	// row that is not, says why.
	Compared bool
	Note     string
}

// Agrees reports whether a compared row's two counts are equal; a row not
// compared agrees.
func (r ViewRow) Agrees() bool {
	return !r.Compared || r.GateCount == r.Populations+r.BeforeHello
}

// floodTally sums a gate's flood reports by reason; the observer adds
// with atomics (it is called from Step and Close).
type floodTally struct {
	n, bytes [core.NumReasons]atomic.Int64
}

func (f *floodTally) observe(e core.FloodEvent) {
	if int(e.Reason) < core.NumReasons {
		f.n[e.Reason].Add(int64(e.Count))
		f.bytes[e.Reason].Add(int64(e.Bytes))
	}
}

type floodCounts struct{ n, bytes [core.NumReasons]int64 }

func (f *floodTally) load() (c floodCounts) {
	for r := range core.NumReasons {
		c.n[r], c.bytes[r] = f.n[r].Load(), f.bytes[r].Load()
	}
	return c
}

// ViewReads keeps the server's counters at the reads that bound the run
// and its measured window, for the ServerView: the monitor calls atBase
// and atWarm with the snapshots it takes.
type ViewReads struct {
	Policy     *core.Policy
	Labels     []string
	floods     floodTally
	Base, warm server.Stats
	warmFloods floodCounts
}

// NewViewReads returns the reads of a run of the in-process server, whose
// gate's flood reports it observes from now on (remove stops that).
func NewViewReads(g *core.Gate, p *core.Policy, labels []string) (v *ViewReads, remove func()) {
	v = &ViewReads{Policy: p, Labels: labels}
	return v, g.Observe(core.GateObserver{Flood: v.floods.observe})
}

// AtBase and atWarm keep the reads before the run and at the end of the
// warm-up; on a nil viewReads they do nothing.
func (v *ViewReads) AtBase(st server.Stats) {
	if v != nil {
		v.Base = st
	}
}

func (v *ViewReads) AtWarm(st server.Stats) {
	if v != nil {
		v.warm, v.warmFloods = st, v.floods.load()
	}
}

// View returns the ServerView of a run whose last read is end; complete
// says the run reached its end.
func (v *ViewReads) View(end server.Stats, complete bool) *ServerView {
	sv := &ServerView{Window: gateCounts(v.warm.Gate, end.Gate, v.warmFloods, v.floods.load())}
	sv.Check = v.Check(end, complete)
	return sv
}

// reasonCounts are counts by core.Reason.
type reasonCounts [core.NumReasons]int64

// gateRows returns the gate's counts by row and reason.
func gateRows(st core.GateStats) map[string]*reasonCounts {
	m := make(map[string]*reasonCounts, len(st.Kinds))
	for _, k := range st.Kinds {
		c := new(reasonCounts)
		for r, n := range k.Counts {
			c[r] = int64(n)
		}
		m[k.Name] = c
	}
	return m
}

// gateCounts returns the change of a gate's counters from a to b.
func gateCounts(a, b core.GateStats, fa, fb floodCounts) GateCounts {
	c := GateCounts{
		Messages:   map[string]map[string]int64{},
		Actions:    map[string]int64{},
		Floods:     map[string]int64{},
		FloodBytes: map[string]int64{},
		StageRises: map[string]int64{},
	}
	ra, rb := gateRows(a), gateRows(b)
	for _, k := range b.Kinds {
		before := ra[k.Name]
		if before == nil {
			before = new(reasonCounts)
		}
		for r, n := range rb[k.Name] {
			if d := n - before[r]; d != 0 {
				if c.Messages[k.Name] == nil {
					c.Messages[k.Name] = map[string]int64{}
				}
				c.Messages[k.Name][core.Reason(r).String()] = d
				if core.Reason(r) == core.TableFull {
					c.TableFull += d
				}
			}
		}
	}
	for i := range b.Actions {
		if d := int64(b.Actions[i] - a.Actions[i]); d != 0 {
			c.Actions[core.Action(i).String()] = d
		}
	}
	for i := range b.StageRises {
		if d := int64(b.StageRises[i] - a.StageRises[i]); d != 0 {
			c.StageRises[core.StrikeStage(i).String()] = d
		}
	}
	for r := range core.NumReasons {
		if d := fb.n[r] - fa.n[r]; d != 0 {
			c.Floods[core.Reason(r).String()] = d
		}
		if d := fb.bytes[r] - fa.bytes[r]; d != 0 {
			c.FloodBytes[core.Reason(r).String()] = d
		}
	}
	c.FloodsTotal = int64(b.TransportFloods - a.TransportFloods)
	c.Lockouts = int64(b.Lockouts - a.Lockouts)
	c.Shadowed = int64(b.Shadowed - a.Shadowed)
	return c
}

// serverRows returns the server's decisions by channel row and reason,
// summed over the populations in labels (pops) and over "(none)" and
// "(other)" (before).
func serverRows(st server.Stats, labels []string) (pops, before map[string]*reasonCounts) {
	add := func(into map[string]*reasonCounts, ps server.PopulationStats) {
		for row, cs := range ps.Channels {
			c := into[row]
			if c == nil {
				c = new(reasonCounts)
				into[row] = c
			}
			c[core.None] += int64(cs.Accepted)
			for _, m := range []map[string]uint64{cs.Dropped, cs.Rejected} {
				for name, n := range m {
					if r, err := core.ParseReason(name); err == nil {
						c[r] += int64(n)
					}
				}
			}
		}
	}
	pops, before = map[string]*reasonCounts{}, map[string]*reasonCounts{}
	for _, l := range labels {
		if l != server.PopulationNone && l != server.PopulationOther {
			add(pops, st.Populations[l])
		}
	}
	add(before, st.Populations[server.PopulationNone])
	add(before, st.Populations[server.PopulationOther])
	return pops, before
}

// rowsDelta returns b - a, row by row.
func rowsDelta(a, b map[string]*reasonCounts) map[string]*reasonCounts {
	out := map[string]*reasonCounts{}
	for row, cb := range b {
		d := *cb
		if ca := a[row]; ca != nil {
			for r := range d {
				d[r] -= ca[r]
			}
		}
		out[row] = &d
	}
	return out
}

// sumRows returns the total of reasons rs over the rows named, in m.
func sumRows(m map[string]*reasonCounts, rows []string, rs []core.Reason) (n int64) {
	for _, row := range rows {
		if c := m[row]; c != nil {
			for _, r := range rs {
				n += c[r]
			}
		}
	}
	return n
}

func joinNames[T interface{ String() string }](xs []T) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += "+"
		}
		s += x.String()
	}
	return s
}

func joinRows(rows []string) string {
	s := ""
	for i, r := range rows {
		if i > 0 {
			s += "+"
		}
		s += r
	}
	return s
}

// Notes of the rows not compared.
const (
	noteByteLimit = "frames of reads the byte budget refused, per frame; the gate counts each such read once, in (transport)"
	noteTransport = "one decision per read; the server counts frames, not reads"
	noteSession   = "the gate counts each Open (no frame, no population) beside each Authenticate (the server's (hello))"
	notePingOwn   = "the server's own ping bucket: no gate call"
)

// Check compares the gate with the server's populations over the run.
func (v *ViewReads) Check(end server.Stats, complete bool) ViewCheck {
	switch {
	case !complete:
		return ViewCheck{Why: "the run stopped before its end: the server was not quiescent at its last read"}
	case end.Conns.Open > v.Base.Conns.Open:
		return ViewCheck{Why: "the server still had connections open at its last read"}
	case end.Gate.Shadow || v.Policy.Shadow:
		return ViewCheck{Why: "shadow mode: the gate counts what it would have refused, which the server accepted"}
	}
	g := rowsDelta(gateRows(v.Base.Gate), gateRows(end.Gate))
	bp, bb := serverRows(v.Base, v.Labels)
	ep, eb := serverRows(end, v.Labels)
	pops, before := rowsDelta(bp, ep), rowsDelta(bb, eb)

	ck := ViewCheck{Made: true, Agree: true}
	row := func(gate, srv []string, rs []core.Reason, compared bool, note string) {
		r := ViewRow{
			Gate: joinRows(gate), Server: joinRows(srv), Reason: joinNames(rs),
			GateCount: sumRows(g, gate, rs), Populations: sumRows(pops, srv, rs), BeforeHello: sumRows(before, srv, rs),
			Compared: compared, Note: note,
		}
		if r.GateCount == 0 && r.Populations == 0 && r.BeforeHello == 0 {
			return
		}
		if !r.Agrees() {
			ck.Agree = false
		}
		ck.Rows = append(ck.Rows, r)
	}
	passed := []core.Reason{core.None, core.QueueFull, core.Closed}
	ping := v.Policy.ChannelIndex(server.DefaultPingChannel)
	for i, c := range v.Policy.Channels {
		gate, srv := []string{c.Name}, []string{c.Name}
		if i == ping {
			srv = append(srv, server.ChannelPing)
		}
		row(gate, srv, passed, true, "")
		for r := core.Reason(1); int(r) < core.NumReasons; r++ {
			switch r {
			case core.QueueFull, core.Closed:
			case core.ByteLimit:
				row(gate, srv, []core.Reason{r}, false, noteByteLimit)
			default:
				row(gate, srv, []core.Reason{r}, true, "")
			}
		}
	}
	unknown := []string{server.ChannelUnknown, server.ChannelHello}
	for r := core.Reason(0); int(r) < core.NumReasons; r++ {
		switch r {
		case core.Malformed, core.Oversize:
			row([]string{gateRowUnknown, gateRowSession}, unknown, []core.Reason{r}, true, "")
		case core.ByteLimit:
			row([]string{gateRowUnknown}, unknown, []core.Reason{r}, false, noteByteLimit)
		default:
			row([]string{gateRowUnknown}, []string{server.ChannelUnknown}, []core.Reason{r}, true, "")
		}
	}
	for r := core.Reason(0); int(r) < core.NumReasons; r++ {
		if r != core.Malformed && r != core.Oversize && r != core.ByteLimit {
			row([]string{gateRowSession}, []string{server.ChannelHello}, []core.Reason{r}, false, noteSession)
		}
	}
	for r := core.Reason(0); int(r) < core.NumReasons; r++ {
		row([]string{gateRowTransport}, nil, []core.Reason{r}, false, noteTransport)
		if ping < 0 {
			row(nil, []string{server.ChannelPing}, []core.Reason{r}, false, notePingOwn)
		}
	}
	return ck
}
