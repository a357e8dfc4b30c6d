package server

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sluicedev/sluice/core"
)

// Population labels the server uses for connections it cannot attribute
// to a Hello label.
const (
	// PopulationNone counts connections and frames before (or without) a
	// Hello (and those of a Hello labelled "(none)").
	PopulationNone = "(none)"
	// PopulationOther counts labels beyond Config.MaxPopulations, and
	// labels that are not printable UTF-8 (and the label "(other)").
	PopulationOther = "(other)"
)

// Disconnect causes that are not gate reasons. Their names appear in
// PopulationStats.Disconnects beside the core.Reason names (a gate or
// server refusal: Oversize, QueueFull, Lockout, Closed for a shutdown...).
const (
	// CauseTimeout: the connection completed no frame for IdleTimeout, or
	// held a partial frame for FrameTimeout. The Disconnect frame sent
	// carries reason 0 (core.None): core has no timeout reason.
	CauseTimeout = "Timeout"
	// CausePeerClosed: the client closed the connection (or reset it).
	CausePeerClosed = "PeerClosed"
	// CauseWriteError: a write failed or timed out (WriteTimeout).
	CauseWriteError = "WriteError"
)

// cause is why a connection ended: a core.Reason below core.NumReasons,
// then the server's own causes.
type cause uint8

const (
	causeTimeout cause = cause(core.NumReasons) + iota
	causePeerClosed
	causeWriteError
	numCauses
)

func (c cause) String() string {
	switch c {
	case causeTimeout:
		return CauseTimeout
	case causePeerClosed:
		return CausePeerClosed
	case causeWriteError:
		return CauseWriteError
	}
	return core.Reason(c).String()
}

// popCounters are one population's counters. Those every read adds to
// (frames, bytes, pongs, the channel rows and the read's service time) are
// striped: each connection adds only to the stripe it was given at
// creation, and snapshot sums the stripes, so each count is in exactly one
// stripe and the sums are what one set of counters would hold; a read's
// counts are added before it publishes its replies (endRead), and snapshot
// loads every stripe, so a client that sees a reply still finds its read
// counted (its service time alone is added after that, by handleRead).
// One set shared by every reader of a population cost a read, with two
// readers in parallel, 1.7 times its CPU without limits and 1.1 times
// with the gate's, as the readers took its lines from each other
// (BenchmarkReadPath, medians of six interleaved runs on two processors:
// 240 and 313 ns of CPU a read, against 145 and 280 striped; 144 and 271
// with one reader). The other counters are updated with atomic adds
// where they are rare (a Hello, a disconnect, a lockout) or written by the
// tick loop alone (inputs, requests, failed).
type popCounters struct {
	name        string
	conns       atomic.Uint64
	inputs      atomic.Uint64
	requests    atomic.Uint64
	failed      atomic.Uint64
	lockouts    atomic.Uint64
	disconnects [numCauses]atomic.Uint64
	// stripes has one entry per stripe (populations.stripes), fixed at
	// creation.
	stripes []*popStripe
}

// popStripe is one stripe of a population's per-read counters. A stripe
// is written by the connections given it (conn.t.stripe) with atomic adds,
// and read by snapshot. Each stripe is its own allocation padded by
// padWords on each side, and its chans sit inside a larger padded array
// (see newStripe), so no two stripes' counters share a cache line.
type popStripe struct {
	// frames counts every frame decoded, independently of its outcome, so
	// that the rule "each frame is accepted, dropped or rejected exactly
	// once" stays checkable against the outcomes in chans.
	frames atomic.Uint64
	bytes  atomic.Uint64
	pongs  atomic.Uint64
	// readNanos is the service time of the reads (handleRead) counted
	// here, each added as its read ends: Stats.ReadService is its sum.
	readNanos atomic.Int64
	// chans are the decisions per channel row (see Server.rowOf): row ×
	// rowStride counters, indexed by rowKey. They are the only record of
	// outcomes: the population's accepted, dropped and rejected totals are
	// their sums over rows and stripes, taken by snapshot.
	chans []atomic.Uint64
}

// padWords is 128 bytes of uint64: two cache lines, so the adjacent-line
// prefetcher does not pair neighbouring stripes either. The padding, the
// padded allocations of newStripe and the power-of-two rounding of
// GOMAXPROCS in popStripes are a copy of those of core's gate counters
// (padWords and newGateStats in core/stats.go, unexported), which round
// 4 × GOMAXPROCS up to at most 256 stripes.
const padWords = 16

// newStripe returns a stripe of rows channel rows, padded on each side.
func newStripe(rows int) *popStripe {
	st := &struct {
		_ [padWords]uint64
		popStripe
		_ [padWords]uint64
	}{}
	backing := make([]atomic.Uint64, rows*rowStride+2*padWords)
	st.chans = backing[padWords : padWords+rows*rowStride : padWords+rows*rowStride]
	return &st.popStripe
}

// maxPopStripes bounds the stripes of a population, whose counters take
// (rows × rowStride + 2 × padWords) words, plus a padded popStripe, each:
// about 75 KiB a stripe for a policy of 256 channels. Beyond 8 readers in
// parallel, connections share stripes.
const maxPopStripes = 8

// popStripes is the number of stripes per population: GOMAXPROCS (at
// New), rounded up to a power of two and at most maxPopStripes, so that a
// server on one processor keeps one set of counters. Connections are
// given stripes in turn as they are created (populations.stripe), so they
// spread evenly over them, and up to that many connections created one
// after another write distinct stripes.
func popStripes() int {
	n := 1
	for n < runtime.GOMAXPROCS(0) && n < maxPopStripes {
		n <<= 1
	}
	return n
}

// Rows of the per-channel counters beyond the policy's channels: their
// keys in PopulationStats.Channels. A policy channel may not take one of
// these names (New refuses it).
const (
	// ChannelHello counts Hello frames that decode (the first, which opens
	// the account, and any later or wrong-version one, malformed).
	ChannelHello = "(hello)"
	// ChannelPing counts Ping frames that decode, whether they are checked
	// on the policy's ping channel or by the server's own bucket.
	ChannelPing = "(ping)"
	// ChannelUnknown counts frames that name no channel: frames that do not
	// decode, oversize ones, server-to-client types, and inputs and
	// requests whose channel byte is past the policy's channels.
	ChannelUnknown = "(unknown)"
)

// extraRows is the number of rows after the policy's channels: hello, ping
// and unknown, in that order.
const extraRows = 3

// rowStride is the number of counters of one channel row: accepted, then
// dropped by reason, then rejected by reason.
const rowStride = 1 + 2*core.NumReasons

// Outcome codes within a row.
func codeDropped(r core.Reason) uint32  { return 1 + uint32(r) }
func codeRejected(r core.Reason) uint32 { return 1 + uint32(core.NumReasons) + uint32(r) }

// addReasons adds the non-zero counts of one row's reasons (indexed by
// core.Reason) to row and to total, by reason name, and returns their sum.
func addReasons(row, total map[string]uint64, counts []uint64) (sum uint64) {
	for r, n := range counts {
		if n != 0 {
			rn := core.Reason(r).String()
			row[rn] = n
			total[rn] += n
			sum += n
		}
	}
	return sum
}

// rowKey is the index in popStripe.chans of outcome code of row.
func rowKey(row int, code uint32) uint32 { return uint32(row*rowStride) + code }

// populations interns labels into a bounded set of counters.
type populations struct {
	max     int
	rows    int           // channel rows per population
	stripes int           // stripes per population: a power of two, fixed at creation
	next    atomic.Uint32 // the stripe the next connection is given, modulo stripes
	mu      sync.RWMutex
	byKey   map[string]*popCounters
	order   []*popCounters
	none    *popCounters
	other   *popCounters
}

// newPopulations returns the populations of a server whose stats have
// rows channel rows, with stripes stripes per population (a power of two:
// popStripes).
func newPopulations(max, rows, stripes int) *populations {
	p := &populations{max: max, rows: rows, stripes: stripes, byKey: make(map[string]*popCounters)}
	p.none = p.add(PopulationNone)
	p.other = p.add(PopulationOther)
	return p
}

func (p *populations) add(name string) *popCounters {
	c := &popCounters{name: name, stripes: make([]*popStripe, p.stripes)}
	for i := range c.stripes {
		c.stripes[i] = newStripe(p.rows)
	}
	p.byKey[name] = c
	p.order = append(p.order, c)
	return c
}

// stripe returns the stripe a new connection counts into, in whichever
// population it counts: the next one in turn. Safe from any goroutine.
func (p *populations) stripe() int32 { return int32((p.next.Add(1) - 1) & uint32(p.stripes-1)) }

// get returns the counters of a label, creating them while fewer than max
// labels are known. The lookup does not allocate.
func (p *populations) get(label []byte) *popCounters {
	p.mu.RLock()
	c := p.byKey[string(label)]
	p.mu.RUnlock()
	if c != nil {
		return c
	}
	if !printable(label) {
		return p.other
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c = p.byKey[string(label)]; c != nil {
		return c
	}
	if len(p.order)-2 >= p.max {
		return p.other
	}
	return p.add(string(label))
}

func printable(b []byte) bool {
	if len(b) == 0 || !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// tally batches a connection's counts over one read, so a flood of tiny
// frames costs one atomic add per counter per read, not per frame. It
// keeps the read's frame count and its counts per channel row and outcome
// as a short list of (key, count) pairs; a read that needs more than
// tallyKeys distinct pairs (a rare mix) adds the rest to the population's
// counters directly. It never allocates.
type tally struct {
	frames uint64
	row    int        // the channel row of the frame being counted
	st     *popStripe // counted into: stripe of the connection's population (see countInto)
	// stripe is the connection's stripe, fixed at creation. It and n and
	// last are 32-bit so that they fit in the two words n and last took
	// alone (a conn then stays within its 512-byte allocation class).
	stripe int32
	n      int32 // pairs in keys and counts
	last   int32 // the pair the last count went to
	keys   [tallyKeys]uint32
	counts [tallyKeys]uint32
}

// tallyKeys is how many distinct (row, outcome) pairs one read batches.
const tallyKeys = 16

func (t *tally) accept()              { t.note(0) }
func (t *tally) drop(r core.Reason)   { t.note(codeDropped(r)) }
func (t *tally) reject(r core.Reason) { t.note(codeRejected(r)) }

// note counts one frame of the current row with outcome code.
func (t *tally) note(code uint32) {
	key := rowKey(t.row, code)
	if t.n > 0 && t.keys[t.last] == key {
		t.counts[t.last]++
		return
	}
	for i := range t.n {
		if t.keys[i] == key {
			t.counts[i]++
			t.last = i
			return
		}
	}
	if t.n == tallyKeys {
		t.st.chans[key].Add(1)
		return
	}
	t.keys[t.n], t.counts[t.n] = key, 1
	t.last = t.n
	t.n++
}

// countInto makes p the population counted into, from now on: the
// connection's stripe of it. The reader calls it as the connection starts
// and when a Hello moves it.
func (t *tally) countInto(p *popCounters) { t.st = p.stripes[t.stripe] }

// flush adds the read's counts to t.st, where any spilled ones went too,
// and clears them (the row and the stripe counted into are kept).
func (t *tally) flush() {
	p := t.st
	if t.frames != 0 {
		p.frames.Add(t.frames)
	}
	for i := range t.n {
		p.chans[t.keys[i]].Add(uint64(t.counts[i]))
	}
	t.frames, t.n, t.last = 0, 0, 0
}

// Stats is a snapshot of the server's counters, a plain value that the
// harness reads at the end of a run. Counters are read one by one while
// traffic may go on, so a snapshot under load is not an atomic cut.
type Stats struct {
	// Populations maps a Hello label (or PopulationNone, PopulationOther)
	// to its counts.
	Populations map[string]PopulationStats
	Conns       ConnStats
	// Ticks is the number of ticks run; Commands the inputs and requests
	// they processed.
	Ticks, Commands uint64
	// QueueFull counts messages refused because the tick queue was full
	// (also counted per population as reason QueueFull).
	QueueFull uint64
	// Frames and Bytes are totals over every population: frames decoded
	// (valid, malformed or oversize) and bytes read.
	Frames, Bytes uint64
	// ReadService is the time, on the server's monotonic clock, spent
	// handling reads (decoding, gate calls, queueing; not the read system
	// calls), TickService the time spent in ticks (handlers, replies,
	// Gate.Step). Divide by Frames for the server's service time per
	// frame; unlike ProcessCPU it excludes whatever else runs in the
	// process (the harness's clients). A read's time is added to
	// ReadService just after the read publishes its replies, so a client
	// that has seen a reply may not find that read's time here yet; once a
	// connection has closed, all of its reads' time is (and stays) here.
	ReadService, TickService time.Duration
	// ProcessCPU is the user and system CPU time of the whole process
	// (getrusage) since Start; 0 where unsupported. Standalone, it is the
	// server's; in-process it includes the harness.
	ProcessCPU time.Duration
	// Uptime is the monotonic time since Start.
	Uptime time.Duration
	// Gate is the gate's own snapshot (per channel and reason).
	Gate core.GateStats
}

// ConnStats counts connections.
type ConnStats struct {
	// Accepted counts connections accepted (including refused ones).
	Accepted uint64
	// Refused counts connections closed at once because MaxConns were
	// open.
	Refused uint64
	// Open is the number open now; Peak the most open at once.
	Open, Peak uint64
}

// PopulationStats are one population's counts. Reason-keyed maps use the
// stable core.Reason names (and, for Disconnects, the Cause names); they
// hold only non-zero counts.
type PopulationStats struct {
	// Connections counts connections attributed to the population (at
	// Hello; PopulationNone counts those that never said Hello).
	Connections uint64
	// Frames counts frames decoded, Bytes bytes read.
	Frames, Bytes uint64
	// Accepted counts frames the gate accepted (and Hellos that opened a
	// session).
	Accepted uint64
	// Inputs counts inputs applied on a tick; Requests requests handled
	// on a tick and answered StatusOK; Failed requests the handler refused
	// (StatusFailed: not authenticated); Pongs pings answered. A request
	// whose connection ended before its tick is answered nothing and
	// counted in neither.
	Inputs, Requests, Failed, Pongs uint64
	// Dropped counts frames dropped silently (no reply), Rejected requests
	// answered StatusRejected, by reason. A read refused by the byte
	// budget drops every frame in it: each counts as ByteLimit.
	Dropped, Rejected map[string]uint64
	// Disconnects counts connections ended by the server or the peer, by
	// cause: each connection once, under the first cause that ended it.
	Disconnects map[string]uint64
	// Lockouts counts connections whose strike stage rose to lockout.
	Lockouts uint64
	// Channels splits Accepted, Dropped and Rejected by what each frame
	// named: inputs and requests under the name of the policy channel
	// their channel byte names, and ChannelHello, ChannelPing and
	// ChannelUnknown (see those). Only rows that counted a frame are
	// present. The population's Accepted, Dropped and Rejected are the
	// sums over its rows.
	Channels map[string]ChannelStats
}

// ChannelStats are one channel row's decisions within a population. The
// reason-keyed maps hold only non-zero counts.
type ChannelStats struct {
	// Frames is Accepted plus every Dropped and Rejected count.
	Frames, Accepted uint64
	// Dropped and Rejected count frames by reason, as in PopulationStats.
	Dropped, Rejected map[string]uint64
}

// snapshot reads the counters, summing the stripes, and returns them with
// the read service time counted in the stripes (readNanos); rows names
// the channel rows. The population's Accepted, Dropped and Rejected are
// the sums of its rows.
func (c *popCounters) snapshot(rows []string) (s PopulationStats, readNanos int64) {
	s = PopulationStats{
		Connections: c.conns.Load(),
		Inputs:      c.inputs.Load(),
		Requests:    c.requests.Load(),
		Failed:      c.failed.Load(),
		Lockouts:    c.lockouts.Load(),
		Dropped:     map[string]uint64{},
		Rejected:    map[string]uint64{},
		Disconnects: map[string]uint64{},
		Channels:    map[string]ChannelStats{},
	}
	chans := make([]uint64, len(rows)*rowStride)
	for _, st := range c.stripes {
		s.Frames += st.frames.Load()
		s.Bytes += st.bytes.Load()
		s.Pongs += st.pongs.Load()
		readNanos += st.readNanos.Load()
		for i := range chans {
			chans[i] += st.chans[i].Load()
		}
	}
	for row, name := range rows {
		cs := ChannelStats{Accepted: chans[rowKey(row, 0)], Dropped: map[string]uint64{}, Rejected: map[string]uint64{}}
		cs.Frames = cs.Accepted +
			addReasons(cs.Dropped, s.Dropped, chans[rowKey(row, codeDropped(0)):][:core.NumReasons]) +
			addReasons(cs.Rejected, s.Rejected, chans[rowKey(row, codeRejected(0)):][:core.NumReasons])
		if cs.Frames != 0 {
			s.Accepted += cs.Accepted
			s.Channels[name] = cs
		}
	}
	for i := range c.disconnects {
		if n := c.disconnects[i].Load(); n != 0 {
			s.Disconnects[cause(i).String()] = n
		}
	}
	return s, readNanos
}

func (s PopulationStats) empty() bool {
	return s.Connections == 0 && s.Frames == 0 && s.Bytes == 0 && len(s.Disconnects) == 0
}
