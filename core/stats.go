package core

import (
	"runtime"
	"sync/atomic"
)

// Rows of the decision table beyond the channels: a frame naming no
// channel, and session lifecycle (Open, Authenticate) refusals.
const (
	statsRowUnknown   = iota // a frame naming no channel
	statsRowTransport        // Gate.Read: bytes charged for a whole read
	statsRowSession          // Open and Authenticate refusals
	statsExtraRows
)

// statsRowNames are the names GateStats gives the extra rows; no channel
// may take one (Policy.Validate refuses it).
var statsRowNames = [statsExtraRows]string{
	statsRowUnknown:   "(unknown)",
	statsRowTransport: "(transport)",
	statsRowSession:   "(session)",
}

// statStripe is one stripe of the gate's counters. Each session writes only
// the stripe its slot maps to, so a flood from many sessions on many cores
// spreads over stripes instead of one contended cache line. The counters
// of a stripe are allocated with a cache-line pad on each side (see
// newGateStats), so stripes never share a line.
type statStripe struct {
	decisions []atomic.Uint64 // [row][reason]: reason None counts accepted
	actions   [numActions]atomic.Uint64
	shadowed  atomic.Uint64 // accepted only because of shadow mode
	floods    atomic.Uint64 // transport-flood drops
	floodB    atomic.Uint64 // their bytes
	panics    atomic.Uint64 // observers that panicked
	rises     [numStages]atomic.Uint64
	lockouts  atomic.Uint64
	// lagForgiven counts drops the lag credit kept from striking.
	lagForgiven atomic.Uint64
}

type gateStats struct {
	stripes []*statStripe
	mask    int
	rows    int
}

// padWords is 128 bytes of uint64: two cache lines, so the adjacent-line
// prefetcher does not pair neighbouring stripes either.
const padWords = 16

func newGateStats(kinds int) gateStats {
	n := 1
	for n < 4*runtime.GOMAXPROCS(0) && n < 256 {
		n <<= 1
	}
	rows := kinds + statsExtraRows
	s := gateStats{stripes: make([]*statStripe, n), mask: n - 1, rows: rows}
	for i := range s.stripes {
		// Each stripe is its own allocation; the decisions slice sits in the
		// middle of a larger array so no other stripe's words share its
		// lines.
		st := &struct {
			_ [padWords]uint64
			statStripe
			_ [padWords]uint64
		}{}
		backing := make([]atomic.Uint64, rows*NumReasons+2*padWords)
		st.decisions = backing[padWords : padWords+rows*NumReasons]
		s.stripes[i] = &st.statStripe
	}
	return s
}

func (s *gateStats) stripe(i int) *statStripe { return s.stripes[i&s.mask] }

// GateStats is a snapshot of a gate's counters. Labels are low-cardinality:
// channel (kind) and reason, never a player, account or address.
type GateStats struct {
	// Shadow is true when the gate runs in shadow mode: Kinds then counts
	// what the gate would have decided.
	Shadow bool
	// Kinds has one row per channel, then "(unknown)" (frames naming no
	// channel), "(transport)" (Gate.Read) and "(session)" (Open and
	// Authenticate).
	Kinds []KindStats
	// Actions counts decisions by the action decided (in shadow mode, the
	// action that would have been taken).
	Actions [numActions]uint64
	// Shadowed counts messages accepted only because of shadow mode.
	Shadowed uint64
	// TransportFloods and TransportFloodBytes count the drops folded into
	// FloodEvents and their bytes.
	TransportFloods     uint64
	TransportFloodBytes uint64
	// ObserverPanics counts observer callbacks that panicked.
	ObserverPanics uint64
	// StageRises counts rises of a strike score into each stage.
	StageRises [numStages]uint64
	// Lockouts counts lockouts imposed.
	Lockouts uint64
	// LagForgiven counts ChannelLimit drops on input channels that earned
	// no strike: the overflow of a flush after a silence (see
	// Channel.LagCredit). They are counted as drops too.
	LagForgiven uint64
}

// KindStats counts decisions for one channel by reason; Counts[None] is the
// number accepted.
type KindStats struct {
	Name   string
	Counts [NumReasons]uint64
}

// Count returns the decisions for the named channel (or "(unknown)",
// "(transport)", "(session)") and reason; reason None counts accepted
// messages.
func (s *GateStats) Count(kind string, r Reason) uint64 {
	for i := range s.Kinds {
		if s.Kinds[i].Name == kind {
			return s.Kinds[i].Counts[r]
		}
	}
	return 0
}

// Total returns the decisions for a reason summed over every row.
func (s *GateStats) Total(r Reason) uint64 {
	var n uint64
	for i := range s.Kinds {
		n += s.Kinds[i].Counts[r]
	}
	return n
}

// Stats returns a snapshot of the counters, summed over stripes. Counters
// are read one by one while traffic may go on, so a snapshot taken under
// load is not an atomic cut.
func (g *Gate) Stats() GateStats {
	out := GateStats{Shadow: g.shadow, Kinds: make([]KindStats, g.stats.rows)}
	for i := range g.chans {
		out.Kinds[i].Name = g.chans[i].name
	}
	for row, name := range statsRowNames {
		out.Kinds[len(g.chans)+row].Name = name
	}
	for _, st := range g.stats.stripes {
		for row := range out.Kinds {
			for r := range NumReasons {
				out.Kinds[row].Counts[r] += st.decisions[row*NumReasons+r].Load()
			}
		}
		for a := range out.Actions {
			out.Actions[a] += st.actions[a].Load()
		}
		out.Shadowed += st.shadowed.Load()
		out.TransportFloods += st.floods.Load()
		out.TransportFloodBytes += st.floodB.Load()
		out.ObserverPanics += st.panics.Load()
		for i := range out.StageRises {
			out.StageRises[i] += st.rises[i].Load()
		}
		out.Lockouts += st.lockouts.Load()
		out.LagForgiven += st.lagForgiven.Load()
	}
	return out
}

// KeyedReports returns the reports of the keyed limiters behind the
// account, address and match layers at now, by layer name; a disabled layer
// is absent. For diagnostics: a report scans its whole table.
func (g *Gate) KeyedReports(now int64) map[string]LimiterReport {
	out := map[string]LimiterReport{}
	for name, k := range map[string]keyedBuckets{"account": g.account, "address": g.address, "match": g.match} {
		if lk, ok := k.(*limiterKeyed); ok {
			out[name] = lk.l.ReportAt(now)
		}
	}
	return out
}
