package reports

import (
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"time"
)

// SchemaVersion is the version of the results file format this package writes
// and the only one it reads. It changes whenever a field changes meaning or a
// reader of the previous version could not read the new files. Version 3:
// the session row (SessionKind) holds every server-ended session by reason,
// and population totals leave it out. Version 4: a population that wrote
// raw bytes (RawKind) has no drop rate (drop_rate null, and no_drop_rate
// says why), and the raw row's sent counts writes only. Version 5: a
// variant records its description and what it was expected to do
// (description, expect), and a reader refuses a file with no variants, a
// variant with no populations, a threshold over a population the variant
// lacks, a drop reason it does not know, or a time series without an
// interval length. Version 6: a message the client never wrote (its
// connection was down) is not a send: a kind, a summary and an interval
// count it in not_sent, apart from sent and out of drops, a kind and a
// summary give scheduled (sent + not_sent), drop_rate is over what was
// sent, and loss_rate (dropped and not sent, over scheduled) is what a
// player lost; the drop reason ConnLimit (a connection refused because
// its address or account holds as many as the policy allows); a run
// against a server sluice did not start (Run.Target, KindStats.Unknown,
// Variant.NotApplicable); segments and their merge (Run.Segment,
// Run.Segments, Run.StartAt, Run.Thresholds, CutOff.Times); the server's
// own view of a loopback run (Variant.Server); what each game server of a
// run of several admitted (Variant.Servers). Version 5
// files are still read (ReadFile converts them).
const SchemaVersion = 6

// OldestSchemaVersion is the oldest results file format this package
// still reads: Unmarshal converts such a file to SchemaVersion.
const OldestSchemaVersion = 5

// Drivers of a run.
const (
	DriverSim      = "sim"      // virtual time, straight into the limiter
	DriverLoopback = "loopback" // real sockets to the reference server on 127.0.0.1
)

// Results is everything one harness run measured. It is the root of a results
// file.
//
// The zero value is not a valid result; New returns one with the schema
// version set. A Results is plain data and not safe for concurrent use: the
// harness merges its per-worker state first and fills the Results from one
// goroutine.
type Results struct {
	// SchemaVersion is always SchemaVersion in files this package writes.
	SchemaVersion int `json:"schema_version"`
	// Run describes what was run and whether it finished.
	Run Run `json:"run"`
	// Environment describes the machine and build that ran it.
	Environment Environment `json:"environment"`
	// Variants holds one entry per policy variant, in the order they were
	// run. The first is the baseline that comparisons are made against.
	Variants []*Variant `json:"variants"`
}

// Run is the metadata of one harness run: the scenario, its seed and driver,
// and the run's time bounds. The zero value is an empty record; the harness
// fills every field it knows.
type Run struct {
	// Scenario is the scenario's name (required).
	Scenario string `json:"scenario"`
	// Description is the scenario's one-paragraph description.
	Description string `json:"description,omitempty"`
	// ScenarioSHA256 is the lowercase hex SHA-256 of the scenario file as
	// read, so a report can be tied to the exact file.
	ScenarioSHA256 string `json:"scenario_sha256,omitempty"`
	// Seed seeds every behaviour's generator; the same seed and driver
	// "sim" give identical measurements: the same file but for the run's
	// start and finish times and the measured server CPU.
	Seed uint64 `json:"seed"`
	// Driver is DriverSim or DriverLoopback.
	Driver string `json:"driver"`
	// Duration is each variant's run length, warmup included.
	Duration time.Duration `json:"duration_ns"`
	// Warmup is the leading part of Duration excluded from counts,
	// histograms and the summaries built from them (time series still
	// cover it, and so do a population's false disconnects, lockouts and
	// cut-off times: a client cut off during the warm-up was cut off).
	Warmup time.Duration `json:"warmup_ns"`
	// Interval is the length of one time-series interval.
	Interval time.Duration `json:"interval_ns,omitempty"`
	// Started and Finished are wall-clock times of the whole run (all
	// variants). For driver "sim" they are still wall-clock times.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Complete is false when the run was interrupted (signal, error, time
	// limit) and the results hold only what was measured until then.
	Complete bool `json:"complete"`
	// Target is the address of a server sluice did not start and could not
	// read (sluice run --target), empty for one it ran. Such a run's
	// single variant names the policy the user said the server runs (sluice
	// did not set it), and its decisions are what the clients saw: see
	// KindStats.Unknown and NoRateUnknown.
	Target string `json:"target,omitempty"`
	// Transport is what the clients spoke the protocol over when not TCP:
	// "ws" (WebSocket, one binary message per frame); empty for TCP.
	Transport string `json:"transport,omitempty"`
	// Segment is "I/N" for one of N shares of a run split over several
	// load generators (sluice run --segment), empty for a whole run.
	// Segments holds, for results merged from them (MergeSegments), how
	// many there were.
	Segment  string `json:"segment,omitempty"`
	Segments int    `json:"segments,omitempty"`
	// StartAt is the wall-clock time the run waited for before it started
	// (sluice run --start-at), so that segments on several machines start
	// together; zero when it started at once.
	StartAt time.Time `json:"start_at,omitzero"`
	// Thresholds are the scenario's thresholds as written, so that results
	// merged from segments can be judged on the whole (each variant's
	// Thresholds hold its own evaluation).
	Thresholds []string `json:"thresholds,omitempty"`
	// PlannedVariants names every variant the run was to run, in order,
	// so that an interrupted run's results say which never ran (NotRun).
	// Empty when unknown (files of schema version 5).
	PlannedVariants []string `json:"planned_variants,omitempty"`
}

// TargetNote says what a run against a Target measured, for every output
// that names the target.
const TargetNote = "its policy is the variant's, as the user said (sluice did not set it); outcomes are what the clients saw, so what became of inputs (no reply) is unknown and the thresholds that need it were not measured"

// Measured returns the length of the measurement window, Duration - Warmup,
// or zero when that is not positive.
func (r Run) Measured() time.Duration {
	if d := r.Duration - r.Warmup; d > 0 {
		return d
	}
	return 0
}

// Environment records the machine and build a run used, so results from
// different machines are not compared blindly. CaptureEnvironment fills it.
// The zero value means "unknown".
type Environment struct {
	// CPU is the processor's brand string.
	CPU string `json:"cpu"`
	// CacheLineBytes is the CPU's cache line size (0 if undetectable).
	CacheLineBytes int `json:"cache_line_bytes"`
	// PhysicalCores and LogicalCores are as reported by cpuid (0 if
	// undetectable).
	PhysicalCores int `json:"physical_cores"`
	LogicalCores  int `json:"logical_cores"`
	// GoVersion is runtime.Version() of the harness binary.
	GoVersion string `json:"go_version"`
	// OS and Arch are runtime.GOOS and runtime.GOARCH.
	OS   string `json:"os"`
	Arch string `json:"arch"`
	// GOMAXPROCS is the value in force during the run.
	GOMAXPROCS int `json:"gomaxprocs"`
	// SluiceVersion is the harness's version string, passed in by the CLI.
	SluiceVersion string `json:"sluice_version"`
}

// Variant is the outcome of running the scenario under one policy variant.
// The zero value is an empty variant; AddVariant makes one with a name and
// policy summary.
type Variant struct {
	// Name is the variant's name, unique within the results (required).
	Name string `json:"name"`
	// Description is the variant's description from the scenario, if any.
	Description string `json:"description,omitempty"`
	// Expect is what the variant was expected to do with its thresholds:
	// ExpectPass (or empty) to hold them all, ExpectFail to fail at least
	// one (a bad policy kept for comparison).
	Expect string `json:"expect,omitempty"`
	// Policy is a short summary of the policy as a JSON object, opaque to
	// this package (the harness chooses what matters). It may be absent.
	Policy json.RawMessage `json:"policy,omitempty"`
	// Populations holds one entry per client population, in scenario order.
	Populations []*Population `json:"populations"`
	// ServerCPU is the server's service time per inbound frame, when
	// measured (see ServerCPU: a time the harness measures, not CPU time;
	// the name is the file format's).
	ServerCPU *ServerCPU `json:"server_cpu,omitempty"`
	// Thresholds are the scenario's thresholds evaluated on this variant.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// NotApplicable lists the scenario's thresholds this variant's run
	// could not measure, and so did not evaluate, each as "EXPR: why": a
	// run against a server it could not read (Run.Target) has no count of
	// what became of inputs. They are neither passed nor failed.
	NotApplicable []string `json:"not_applicable,omitempty"`
	// Invalid lists the reasons this variant's measurements cannot be
	// trusted (for example send lag too large: the load generator could not
	// keep its schedule). Empty when valid.
	Invalid []string `json:"invalid,omitempty"`
	// Server is the server's own view of the run (loopback runs against
	// the in-process server), beside the populations' counts; absent
	// otherwise.
	Server *ServerView `json:"server,omitempty"`
	// Stopped, when the variant's run was stopped before its end
	// (interrupted), is how far it got from the run's start; 0 when it
	// ran to the end. Its rates per second are over what it measured.
	Stopped time.Duration `json:"stopped_ns,omitempty"`
	// Servers is what each game server admitted, for a run of several
	// (see GameServer); absent for one.
	Servers []GameServer `json:"servers,omitempty"`
}

// Values of Variant.Expect.
const (
	ExpectPass = "pass" // every threshold should hold
	ExpectFail = "fail" // at least one threshold should fail: a bad policy kept for comparison
)

// ExpectsFail reports whether v was expected to fail its thresholds.
func (v *Variant) ExpectsFail() bool { return v.Expect == ExpectFail }

// Incomplete reports whether v's run was stopped before its end (see
// Stopped): its counts cover only part of the run, so they do not compare
// with those of a complete variant.
func (v *Variant) Incomplete() bool { return v.Stopped > 0 }

// IncompleteNote says how far a variant that stopped early got and what
// its numbers cover, in one sentence every output uses alike ("tight
// stopped 2.437s into its 4s and measured 2.037s after the warm-up; ...").
func (r *Results) IncompleteNote(v *Variant) string {
	measured := "measured nothing (it stopped in the warm-up)"
	if m := r.MeasuredOf(v); m > 0 {
		measured = fmt.Sprintf("measured %v after the warm-up", m.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s stopped %v into its %v and %s; its numbers cover only that and do not compare with complete variants", v.Name, v.Stopped.Round(time.Millisecond), r.Run.Duration, measured)
}

// MeasuredOf is the measured window of variant v: Run.Measured(), or
// what v measured before it was stopped.
func (r *Results) MeasuredOf(v *Variant) time.Duration {
	m := r.Run.Measured()
	if v.Stopped > 0 {
		m = min(m, max(0, v.Stopped-r.Run.Warmup))
	}
	return m
}

// Role says whether a population is honest (its drops are false positives)
// or hostile (its admitted traffic is what leaked through).
type Role string

// The roles.
const (
	Honest  Role = "honest"  // honest and laggy players
	Hostile Role = "hostile" // floods, replays, malformed traffic
)

// Population is one group of clients that share a behaviour, within one
// variant. The zero value is an empty population; AddPopulation makes one.
type Population struct {
	// Name is the population's label from the scenario, unique within the
	// variant (required).
	Name string `json:"name"`
	// Behaviour names the behaviour generator (for example "honest",
	// "laggy", "flood").
	Behaviour string `json:"behaviour"`
	// Role is Honest or Hostile.
	Role Role `json:"role"`
	// Clients is the number of clients in the population.
	Clients int `json:"clients"`
	// Transport is what the population's clients spoke the protocol over
	// (tcp, ws, udp), set only in a run whose populations did not all
	// speak one (Run.Transport is the run's, the others').
	Transport string `json:"transport,omitempty"`
	// Kinds holds per message kind counts and latencies, in first-seen
	// order.
	Kinds []*KindStats `json:"kinds"`
	// Series is the population's time series, one entry per interval in
	// time order, all kinds together.
	Series []Interval `json:"series,omitempty"`
	// Summary holds the population's summary measures.
	Summary Summary `json:"summary"`
}

// KindStats are the counts and latencies of one message kind (for example
// "move", "chat", "purchase") sent by one population during the measurement
// window. The zero value is an empty record.
type KindStats struct {
	// Kind is the message kind's name, unique within the population.
	// SessionKind is reserved for the sessions the server ended.
	Kind string `json:"kind"`
	// Scheduled counts messages the schedule asked to send: Sent +
	// NotSent (derived: Finalize sets it, and a file must agree).
	Scheduled int64 `json:"scheduled"`
	// Sent counts messages the client wrote. Most end accepted or in
	// exactly one drop reason (client-seen reasons included); the rest,
	// Sent − Accepted − Dropped(), have no recorded outcome (see
	// NoOutcome). sluice's scenarios count a request that the server
	// decided and whose reply the client then lost under both, and in
	// Sent twice, so that Sent stays at least the sum. For RawKind, Sent
	// counts writes of raw bytes (see RawKind).
	Sent int64 `json:"sent"`
	// NotSent counts messages the schedule asked for that the client never
	// wrote: its connection was down (disconnected, locked out, not yet
	// reconnected) or its held buffer was full. They are not sends and
	// not drops: the server never saw them. Drop(NotSentReason, n) adds
	// here.
	NotSent int64 `json:"not_sent,omitempty"`
	// Accepted counts messages the server accepted.
	Accepted int64 `json:"accepted"`
	// SentBytes counts the frame bytes of the messages written (one never
	// written has none); AcceptedBytes those of the messages accepted,
	// which a harness may estimate (sluice's scenarios take the accepted
	// share of the frames written).
	SentBytes     int64 `json:"sent_bytes,omitempty"`
	AcceptedBytes int64 `json:"accepted_bytes,omitempty"`
	// Unknown counts messages written whose fate the run could not see:
	// inputs (which get no reply) sent to a server whose counters it did
	// not read (Run.Target). They are part of Sent, neither accepted nor
	// dropped; a kind with any has no drop rate (NoRateUnknown).
	Unknown int64 `json:"unknown,omitempty"`
	// Drops counts dropped messages by stable reason name (see
	// KnownReasons). Reasons with no drops are omitted.
	Drops map[string]int64 `json:"drops,omitempty"`
	// ResponseTime is measured from the intended send time to the reply
	// (coordinated-omission free); ServiceTime from the actual send to the
	// reply; SendLag from the intended to the actual send. Each may be
	// absent when nothing was measured.
	ResponseTime *Histogram `json:"response_time,omitempty"`
	ServiceTime  *Histogram `json:"service_time,omitempty"`
	SendLag      *Histogram `json:"send_lag,omitempty"`
}

// SessionKind is the kind under which a harness records the sessions the
// server ended: Sent counts them and Drops gives each one's reason (the
// server's, or Disconnected when it gave none). Session ends are not
// messages, so no population total, rate, chart or threshold over all
// kinds counts them; a threshold may name the kind to read them.
const SessionKind = "session"

// IsSessions reports whether k is the SessionKind record.
func (k *KindStats) IsSessions() bool { return k.Kind == SessionKind }

// RawKind is the kind under which a harness records bytes written as-is
// (malformed frames, random bytes, lying lengths, a frame dribbled a few
// bytes at a time) and the server's decisions on the frames it read that
// no other kind describes. The client cannot know how the server will
// delimit such bytes, so the row counts two things: Sent, NotSent and the
// reasons only the client sees (Disconnected...) count writes, while
// Accepted and the server's reasons (Malformed, Oversize...) count frames,
// and may outnumber the writes. No rate divides the one by the other: the
// row has no drop rate, nor has a population that wrote raw bytes (its raw
// row's Sent is not 0: Summary.DropRate is nil), and NoOutcome means
// nothing for it. Its counts are still added into the population's totals,
// which are then partly in writes. (A raw row with no writes holds only
// the server's decisions on frames the population sent as other kinds,
// such as an oversize one: counted in frames like them.)
const RawKind = "raw"

// IsRaw reports whether k is the RawKind record.
func (k *KindStats) IsRaw() bool { return k.Kind == RawKind }

// HelloKind and PingKind are the kinds under which a harness records a
// session's handshake and its keep-alive pings. They are messages (sent,
// accepted, dropped) but not game messages: what a client gets through
// by sending them is a session, not play (see IsGame).
const (
	HelloKind = "hello"
	PingKind  = "ping"
)

// IsGame reports whether k counts game messages: the inputs and requests a
// client plays with (move, ability, chat, purchase, and the raw row, whose
// accepted frames are inputs and requests on channels no other kind
// describes: a frame the server could not read is never accepted). The
// session row, hellos and pings are not. "Admitted" on the report and in
// the CLI's summary is accepted game messages per second of the measured
// window: for a hostile population, what its attack got through. A client
// that reconnects more sends more hellos, and counting them would hide
// that it got less play through; the report shows accepted hellos apart
// (admitted handshakes).
func (k *KindStats) IsGame() bool {
	return !k.IsSessions() && k.Kind != HelloKind && k.Kind != PingKind
}

// GameAccepted returns the game messages of p the server accepted and
// their bytes (see KindStats.IsGame): over the measured window, what the
// report calls admitted.
func (p *Population) GameAccepted() (msgs, bytes int64) {
	for _, k := range p.Kinds {
		if k.IsGame() {
			msgs += k.Accepted
			bytes += k.AcceptedBytes
		}
	}
	return msgs, bytes
}

// NoRateRaw is Summary.NoDropRate for a population that wrote raw bytes.
// Validate holds a file to this exact text, so it is part of the file
// format: rewording it is a change of SchemaVersion.
const NoRateRaw = "raw bytes: sent counts writes, the server's drops count the frames it read from them"

// NoRateUnknown is Summary.NoDropRate for a population some of whose
// messages have an unknown fate (KindStats.Unknown). Like NoRateRaw it is
// part of the file format.
const NoRateUnknown = "inputs get no reply, and the server's own counts were not read: their fate is unknown"

// NoDropRate returns why p has no drop rate ("" when it has one): it wrote
// raw bytes, which its raw row counts in writes (NoRateRaw), or some of its
// messages' fate is unknown (NoRateUnknown).
func (p *Population) NoDropRate() string {
	why := ""
	for _, k := range p.Kinds {
		switch {
		case k.IsRaw() && k.Sent != 0:
			return NoRateRaw
		case k.Unknown != 0 && !k.IsSessions():
			why = NoRateUnknown
		}
	}
	return why
}

// NotSentReason is the outcome name of a message the client never wrote.
// It is not a drop reason: KindStats.Drop and AddInterval count it in
// NotSent, and a drops map in a file may not hold it.
const NotSentReason = "NotSent"

// LossRate returns k's loss, (Dropped() + NotSent) ÷ Scheduled: the share
// of what the schedule asked for that did not get through as a decision
// of the server or was never sent. false when it has none, as DropRate.
func (k *KindStats) LossRate() (float64, bool) {
	sched := k.Sent + k.NotSent
	if sched == 0 || k.IsSessions() || k.IsRaw() {
		return 0, false
	}
	return float64(k.Dropped()+k.NotSent) / float64(sched), true
}

// DropRate returns k's drop rate, Dropped() ÷ Sent, and true; false when
// it has none: nothing was sent, k is the session row (not messages) or
// the raw row (see RawKind), or some of its messages' fate is unknown.
func (k *KindStats) DropRate() (float64, bool) {
	if k.Sent == 0 || k.IsSessions() || k.IsRaw() || k.Unknown != 0 {
		return 0, false
	}
	return float64(k.Dropped()) / float64(k.Sent), true
}

// MessageKinds yields p's kinds of message: every kind but the session row.
// Totals, rates and charts of messages are over these.
func (p *Population) MessageKinds() iter.Seq[*KindStats] {
	return func(yield func(*KindStats) bool) {
		for _, k := range p.Kinds {
			if !k.IsSessions() && !yield(k) {
				return
			}
		}
	}
}

// NoOutcome returns the messages of k with no recorded outcome: Sent less
// the accepted and the dropped. They are messages held by their client when
// the run ended, inputs written that the server never decided (lost in a
// connection it closed before reading them, or on their way at the end of
// the run or across the edge of the measured window), and frames the server
// could not read a kind from, which it decides under the raw kind. A
// request accepted and then timed out counts both as accepted and as a
// Timeout drop, which lowers the remainder (it never goes below 0). It is
// not meaningful for RawKind, whose Sent counts writes while the server
// decides frames, nor for SessionKind.
func (k *KindStats) NoOutcome() int64 { return max(0, k.Sent-k.Accepted-k.Dropped()) }

// Dropped returns the total of k's drops over all reasons.
func (k *KindStats) Dropped() int64 {
	var n int64
	for _, c := range k.Drops {
		n += c
	}
	return n
}

// Interval is one point of a population's time series: what happened in
// [Start, Start+Length) measured from the start of the variant's run (warmup
// included). The zero value is an empty interval at time zero.
type Interval struct {
	// Start is the interval's start, from the start of the run.
	Start time.Duration `json:"start_ns"`
	// Length is the interval's length.
	Length time.Duration `json:"length_ns"`
	// Sent counts the messages of every kind written in the interval
	// (frames, hellos, raw writes): it leaves out those never written
	// (NotSent, Refused, HeldAtEnd), though Drops counts the Refused ones.
	// NotSent counts those the client could not write. Accepted counts the
	// messages the server accepted.
	Sent     int64 `json:"sent"`
	NotSent  int64 `json:"not_sent,omitempty"`
	Accepted int64 `json:"accepted"`
	// Drops counts drops by stable reason name.
	Drops map[string]int64 `json:"drops,omitempty"`
	// Responses counts the response times recorded in the interval;
	// P50 and P99 are their percentiles (0 when Responses is 0), computed
	// as Percentiles computes them from the interval's histogram, HDR.
	// That histogram may be coarser than the kinds': sluice's resolve
	// 1 ns with two significant digits (see "Latency resolution" in the
	// package documentation).
	Responses int64 `json:"responses"`
	P50       int64 `json:"p50_ns"`
	P99       int64 `json:"p99_ns"`
	// HDR is the interval's response-time histogram in the encoding of
	// Histogram.HDR, for the .hlog export. It may be absent.
	HDR string `json:"hdr,omitempty"`
}

// Summary holds a population's summary measures over the measurement window.
// Finalize computes the fields marked "derived" from the kinds; the harness
// sets the others. Fields that do not apply to the population's role are
// zero and omitted.
type Summary struct {
	// Scheduled, Sent, NotSent, Accepted and Dropped total every kind but
	// the session row (derived). With a raw row they add its writes to
	// messages (see RawKind).
	Scheduled int64 `json:"scheduled"`
	Sent      int64 `json:"sent"`
	NotSent   int64 `json:"not_sent"`
	Accepted  int64 `json:"accepted"`
	Dropped   int64 `json:"dropped"`
	// LossRate is (Dropped + NotSent) / Scheduled: what the population's
	// clients meant to send and lost, to the server's drops or to a
	// connection that was down (derived; nil exactly when DropRate is).
	// Thresholds' drop_rate reads it.
	LossRate *float64 `json:"loss_rate"`
	// DropRate is Dropped / Sent, 0 when nothing was sent (derived). It is
	// nil (null in JSON) when the two do not count the same thing, and
	// NoDropRate then says why: a population that wrote raw bytes counts
	// them in writes and the server's drops of them in frames (NoRateRaw).
	// Both are empty in a summary Finalize has not derived.
	DropRate   *float64 `json:"drop_rate"`
	NoDropRate string   `json:"no_drop_rate,omitempty"`
	// ResponseP50 and ResponseP99 are percentiles of the response time of
	// every kind together (derived).
	ResponseP50 int64 `json:"response_p50_ns"`
	ResponseP99 int64 `json:"response_p99_ns"`
	// FalseDisconnects counts honest clients the server disconnected, and
	// FalseLockouts honest clients (or accounts) it locked out.
	FalseDisconnects int64 `json:"false_disconnects,omitempty"`
	FalseLockouts    int64 `json:"false_lockouts,omitempty"`
	// AdmittedPerSec and AdmittedBytesPerSec are the accepted messages and
	// bytes per second of the measurement window, of every kind but the
	// session row, hellos and pings included (derived), as a threshold's
	// admitted_per_s reads them. The report and the CLI's summary do not
	// show these: their "admitted" is game messages only (see
	// KindStats.IsGame), computed from the kinds.
	AdmittedPerSec      float64 `json:"admitted_per_s"`
	AdmittedBytesPerSec float64 `json:"admitted_bytes_per_s"`
	// CutOff says how quickly hostile clients were cut off (disconnected
	// or locked out). Absent for honest populations.
	CutOff *CutOff `json:"cut_off,omitempty"`
}

// CutOff summarises the time from each hostile client's first message to
// the moment the server cut it off. CutOffTimes builds one. The zero value
// means no client was cut off.
type CutOff struct {
	// Clients is how many clients were cut off; Of how many there were
	// to cut off (sluice's scenarios count the clients that connected at
	// least once: one whose arrival fell after the end of the run never
	// took part).
	Clients int `json:"clients"`
	Of      int `json:"of"`
	// P50 and Max are over the clients that were cut off.
	P50 time.Duration `json:"p50_ns"`
	Max time.Duration `json:"max_ns"`
	// AllP50 is the median over all Of clients, a client never cut off
	// counting as never: Never when fewer than half were cut off.
	AllP50 time.Duration `json:"all_p50_ns"`
	// Times are the times of the clients cut off, in increasing order, so
	// that segments of one run merge exactly (MergeSegments). Files from
	// before they were recorded have none.
	Times []time.Duration `json:"times_ns,omitempty"`
}

// Never is a CutOff time for a client that was never cut off.
const Never = time.Duration(math.MaxInt64)

// MaxAll is the longest time until a client was cut off, over all Of
// clients: Never when any of them was not.
func (c *CutOff) MaxAll() time.Duration {
	if c.Clients < c.Of {
		return Never
	}
	return c.Max
}

// ServerCPU is the server's service time per inbound frame for one
// variant (its name, and its JSON keys', is older than that meaning; see
// CPU). The zero value means nothing was measured.
type ServerCPU struct {
	// Frames is the number of inbound frames the server handled over the
	// whole run, warm-up included.
	Frames int64 `json:"frames"`
	// CPU is the time the server spent handling them, as the harness
	// measures it, not the process's user + system CPU time: sluice's
	// loopback runs take the reference server's service time on its
	// monotonic clock (decoding, gate calls, queueing and ticks, not the
	// read system calls), its sim runs the wall time spent in the
	// simulated server (sampled). Both cover the whole run, warm-up
	// included, as Frames does.
	CPU time.Duration `json:"cpu_ns"`
	// NsPerFrame is CPU / Frames.
	NsPerFrame float64 `json:"ns_per_frame"`
}

// UnitFraction is the Unit of a share, such as a drop rate: a fraction (0.001
// is 0.1%), shown as a percentage beside its value.
const UnitFraction = "fraction"

// UnitNs is the Unit of a duration in nanoseconds, shown as a duration.
const UnitNs = "ns"

// Threshold is one of the scenario's pass/fail conditions evaluated on a
// variant. The zero value is a failed, empty threshold.
type Threshold struct {
	// Expr is the condition as written in the scenario, for example
	// "honest.drop_rate < 0.001".
	Expr string `json:"expr"`
	// Value is the measured value of the condition's left-hand side: NaN
	// when it could not be measured, +Inf for "never" (a time to cut off
	// when a client was never cut off). In JSON those are the strings "NaN",
	// "+Inf" and "-Inf".
	Value float64 `json:"value"`
	// Unit is Value's unit for display ("", "ns", "1/s", UnitFraction...).
	Unit string `json:"unit,omitempty"`
	// Pass says whether the condition held.
	Pass bool `json:"pass"`
}

// knownReasons lists the stable drop-reason names in report order: the
// limiter's reasons (core.Reason's names, None excluded), then the outcomes
// only a client sees.
var knownReasons = []string{
	"ChannelLimit", "ByteLimit", "FrameLimit", "AccountLimit", "MatchLimit",
	"AddressLimit", "InFlightLimit", "Oversize", "Malformed", "Duplicate",
	"Replay", "NoSession", "Locked", "Lockout", "TableFull", "QueueFull",
	"Closed", "ConnLimit",
	// client-seen
	"Timeout", "Disconnected", "Refused", "Overflow",
	// a session ended with a reason the client does not know (a server of
	// another version), or refused by the server's own handler
	"UnknownReason", "Failed",
}

// KnownReasons returns the drop-reason names this package knows, in the
// order reports list them: the server's reasons (the names of core.Reason)
// followed by the client-seen Timeout, Disconnected, Refused and Overflow,
// and UnknownReason and Failed (how a session can end). NotSent is not
// among them: a message never written is not dropped (NotSentReason).
// Results built in memory may carry other reason names; reports list those
// after the known ones, by name. A file read in may not (Unmarshal): a new
// reason comes with a new SchemaVersion.
func KnownReasons() []string {
	return append([]string(nil), knownReasons...)
}

func reasonRank(name string) int {
	for i, n := range knownReasons {
		if n == name {
			return i
		}
	}
	return len(knownReasons)
}

// NoRateGroup is the populations that have no drop rate for one reason.
type NoRateGroup struct {
	Names []string
	Why   string // Population.NoDropRate
}

// NoRateGroups groups the populations of pops that have no drop rate by
// the reason, in the order the reasons first appear; nil when every one
// has one.
func NoRateGroups(pops []*Population) []NoRateGroup {
	var out []NoRateGroup
	for _, p := range pops {
		why := p.NoDropRate()
		if why == "" {
			continue
		}
		i := slices.IndexFunc(out, func(g NoRateGroup) bool { return g.Why == why })
		if i < 0 {
			i = len(out)
			out = append(out, NoRateGroup{Why: why})
		}
		out[i].Names = append(out[i].Names, p.Name)
	}
	return out
}

// NoRateNote says which of pops have no drop rate and why, grouped by
// reason: "flood, slow (raw bytes: ...)"; "" when every one has one.
// After a reason, more(why) may add words of its own.
func NoRateNote(pops []*Population, more func(why string) string) string {
	var parts []string
	for _, g := range NoRateGroups(pops) {
		extra := ""
		if more != nil {
			extra = more(g.Why)
		}
		parts = append(parts, strings.Join(g.Names, ", ")+" ("+g.Why+extra+")")
	}
	return strings.Join(parts, "; ")
}
