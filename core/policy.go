package core

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/internal/suggest"
	"github.com/sluicedev/sluice/shardmap"
)

// Policy is the configuration of a Gate: the channels (command kinds) a
// client may send on and their limits, the connection transport budgets
// under them, the account, pre-auth address and match aggregate budgets, the
// per-connection queue caps, the strike ladder, table bounds, escalation and
// shadow mode.
//
// A Policy is plain data. Optional numbers are pointers: nil means "use the
// default" and is remembered after Normalize (see the Defaulted fields), so
// an explicit zero is an error rather than a silent default. With Go 1.26 a
// literal can set one with new: Rate: new(5.0).
//
// Decode one from YAML with DecodePolicyYAML or from JSON with
// DecodePolicyJSON; both reject unknown fields with an error naming the field
// path and source line. Validate reports every bad limit with its path;
// NewGate normalizes and validates a copy. The zero Policy (no channels) is
// valid but gates nothing but the transport. A Policy is not safe for
// concurrent mutation; the Gate keeps its own copy.
type Policy struct {
	// Channels are the command kinds, indexed by Message.Kind in this order.
	Channels []Channel `yaml:"channels,omitempty" json:"channels,omitempty"`
	// Transport meters each connection's raw traffic in bytes and frames.
	Transport Transport `yaml:"transport,omitempty" json:"transport,omitempty"`
	// Account is the bucket shared by all of an account's connections,
	// charged each message's token cost after authentication.
	Account Budget `yaml:"account,omitempty" json:"account,omitempty"`
	// Address is the relaxed pre-auth bucket per source address (NAT puts
	// many honest players behind one): charged one token per Open and each
	// message's cost while the session is not authenticated.
	Address Budget `yaml:"address,omitempty" json:"address,omitempty"`
	// Match is the aggregate bucket per match / room / party id
	// (Message.Match), charged each message's cost.
	Match Budget `yaml:"match,omitempty" json:"match,omitempty"`
	// Queue caps what one connection may have pending in the server.
	Queue Queue `yaml:"queue,omitempty" json:"queue,omitempty"`
	// Strikes configures the weighted, decaying strike ladder.
	Strikes Strikes `yaml:"strikes,omitempty" json:"strikes,omitempty"`
	// Tables bounds the number of tracked sessions and keys.
	Tables Tables `yaml:"tables,omitempty" json:"tables,omitempty"`
	// Connections caps the sessions one source address or one account may
	// hold at once, and sets what a handshake costs the address bucket.
	Connections Connections `yaml:"connections,omitempty" json:"connections,omitempty"`
	// Escalation configures the keyed limiter's soft-throttle to lockout
	// escalation and what a full table does.
	Escalation Escalation `yaml:"escalation,omitempty" json:"escalation,omitempty"`
	// Shadow makes the gate decide and record everything but enforce
	// nothing: every verdict's Action is Accept.
	Shadow bool `yaml:"shadow,omitempty" json:"shadow,omitempty"`
	// Fleet makes keyed layers shared by a fleet of servers (package
	// fleet builds them); off by default.
	Fleet Fleet `yaml:"fleet,omitempty" json:"fleet,omitempty"`

	// lines maps field paths to source positions when the policy was
	// decoded; Validate uses it to say where a bad value came from.
	lines map[string]srcPos
}

// srcPos is a field's place in its source: line, and column (0 when not
// known: JSON).
type srcPos struct{ line, col int }

// Class says what a rate-limited client observes on a channel.
type Class uint8

const (
	// ClassUnset is the zero value; a channel must set its class.
	ClassUnset Class = iota
	// ClassInput is replaceable input (movement): dropped silently.
	ClassInput
	// ClassRequest is a request the client must hear about (purchase,
	// chat): rejected with the reason and a retry-after.
	ClassRequest
	// ClassPredicted is a predicted intent: dropped without an ack, so the
	// client's prediction times out and rolls back.
	ClassPredicted
)

var classNames = [...]string{ClassUnset: "", ClassInput: "input", ClassRequest: "request", ClassPredicted: "predicted"}

func (c Class) String() string {
	if int(c) < len(classNames) && c != ClassUnset {
		return classNames[c]
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText encodes the class name.
func (c Class) MarshalText() ([]byte, error) {
	if c == ClassUnset || int(c) >= len(classNames) {
		return nil, fmt.Errorf("core: unknown channel class %d", uint8(c))
	}
	return []byte(classNames[c]), nil
}

// UnmarshalText decodes input, request or predicted.
func (c *Class) UnmarshalText(b []byte) error {
	for i, n := range classNames {
		if n != "" && n == string(b) {
			*c = Class(i)
			return nil
		}
	}
	return fmt.Errorf("unknown class %q (want input, request or predicted)", b)
}

// Direction says who sends on a channel. Only client-to-server channels are
// gated; a client frame on a server-to-client channel is malformed.
type Direction uint8

const (
	// ClientToServer is the default: clients send, the gate meters.
	ClientToServer Direction = iota
	// ServerToClient channels are listed for completeness (and the audit);
	// a client may not send on them.
	ServerToClient
)

// MarshalText encodes client-to-server or server-to-client.
func (d Direction) MarshalText() ([]byte, error) {
	switch d {
	case ClientToServer:
		return []byte("client-to-server"), nil
	case ServerToClient:
		return []byte("server-to-client"), nil
	}
	return nil, fmt.Errorf("core: unknown direction %d", uint8(d))
}

// UnmarshalText decodes client-to-server or server-to-client.
func (d *Direction) UnmarshalText(b []byte) error {
	switch string(b) {
	case "client-to-server":
		*d = ClientToServer
	case "server-to-client":
		*d = ServerToClient
	default:
		return fmt.Errorf("unknown direction %q (want client-to-server or server-to-client)", b)
	}
	return nil
}

// Duration is a time.Duration written as a Go duration string ("30s",
// "1m30s") in YAML and JSON.
type Duration time.Duration

func (d Duration) std() time.Duration { return time.Duration(d) }

// MarshalText encodes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration: %q", b)
	}
	*d = Duration(v)
	return nil
}

// Channel is one command kind: a class, a per-session token bucket and a
// token cost per message.
type Channel struct {
	// Name identifies the channel in stats, events and audit findings.
	Name string `yaml:"name" json:"name"`
	// Class is input, request or predicted (required).
	Class Class `yaml:"class" json:"class"`
	// Direction defaults to client-to-server.
	Direction Direction `yaml:"direction,omitempty" json:"direction,omitempty"`
	// Rate is tokens per second; default 30. The bucket is the session's
	// before authentication and the account's after: shared by all of an
	// account's sessions and kept when they close, so reconnecting never
	// resets it.
	Rate *float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	// Burst is the bucket depth; default max(1, ceil(rate)).
	Burst *float64 `yaml:"burst,omitempty" json:"burst,omitempty"`
	// Cost is the tokens one message takes from this channel's bucket and
	// from the account, address and match buckets; default 1.
	Cost *uint64 `yaml:"cost,omitempty" json:"cost,omitempty"`
	// MaxSize is the largest message on this channel in bytes; default the
	// transport's max frame.
	MaxSize *uint32 `yaml:"maxSize,omitempty" json:"maxSize,omitempty"`
	// InFlight caps requests of this kind in flight per account (handlers
	// not yet Done), for kinds where concurrency matters (purchases). 0 means
	// no cap. Request channels only.
	InFlight uint32 `yaml:"inFlight,omitempty" json:"inFlight,omitempty"`
	// RetryAfter says whether a rejection tells the client when to retry;
	// default true for request channels. Meaningful for requests only.
	RetryAfter *bool `yaml:"retryAfter,omitempty" json:"retryAfter,omitempty"`
	// LagCredit is the longest silence an input channel's flush is
	// credited for: when a message arrives after the channel (of the
	// session, or of the account once authenticated) admitted nothing for
	// a silence S longer than the bucket's fill time (burst ÷ rate), up to
	// min(S, LagCredit) × rate − burst of the drops that follow within one
	// fill time earn no strike (the held inputs of a lagging client,
	// flushed at once; see the Gate). They are still dropped: the credit
	// admits nothing. Default 5s for input channels, 0 turns it off;
	// input channels only.
	LagCredit *Duration `yaml:"lagCredit,omitempty" json:"lagCredit,omitempty"`

	// RateDefaulted and BurstDefaulted record that Normalize filled in the
	// default; the audit reports defaulted rates.
	RateDefaulted  bool `yaml:"-" json:"-"`
	BurstDefaulted bool `yaml:"-" json:"-"`
}

// Budget is a token bucket configuration: rate per second and burst.
type Budget struct {
	Rate  *float64 `yaml:"rate,omitempty" json:"rate,omitempty"`
	Burst *float64 `yaml:"burst,omitempty" json:"burst,omitempty"`
	// Disabled turns the layer off.
	Disabled bool `yaml:"disabled,omitempty" json:"disabled,omitempty"`

	RateDefaulted  bool `yaml:"-" json:"-"`
	BurstDefaulted bool `yaml:"-" json:"-"`
}

// Transport is the per-connection budget under the channels, checked before
// any decode.
type Transport struct {
	// Bytes is a continuous byte bucket; default 480,000 B/s (8,000 bytes
	// per 1/60 s heartbeat) with a burst of 8,000.
	Bytes Budget `yaml:"bytes,omitempty" json:"bytes,omitempty"`
	// MinCharge is the least a read is charged, so tiny payloads still
	// cost; default 800 bytes (10 reads per 8,000-byte heartbeat). An
	// empty read or frame costs at least 1 even with MinCharge 0.
	MinCharge *uint32 `yaml:"minCharge,omitempty" json:"minCharge,omitempty"`
	// Frames is one token per frame; default 240/s with a burst of 128.
	Frames Budget `yaml:"frames,omitempty" json:"frames,omitempty"`
	// MaxFrame is the largest frame in bytes; default 4,096.
	MaxFrame *uint32 `yaml:"maxFrame,omitempty" json:"maxFrame,omitempty"`
}

// Queue caps what one connection may have pending: requests accepted and
// not yet Done, and their bytes.
type Queue struct {
	// Commands is the most requests pending per connection; default 32.
	Commands *uint32 `yaml:"commands,omitempty" json:"commands,omitempty"`
	// PendingBytes is the most bytes of pending requests; default 65,536.
	PendingBytes *uint32 `yaml:"pendingBytes,omitempty" json:"pendingBytes,omitempty"`
	// ReplayWindow is how many completed request ids per session are
	// remembered for replay detection; default 64, rounded up to a power of
	// two.
	ReplayWindow *uint32 `yaml:"replayWindow,omitempty" json:"replayWindow,omitempty"`
}

// Strikes configures the strike ladder: every denial adds its reason's
// weight to a score that decays linearly, losing Ladder.Disconnect points
// per Window; crossing a rung escalates.
type Strikes struct {
	// Window is the time a score at the disconnect rung takes to decay to
	// zero; default 30s.
	Window *Duration `yaml:"window,omitempty" json:"window,omitempty"`
	// Weights overrides the default weight of a reason (see
	// DefaultStrikeWeights). A weight of 0 earns no strike.
	Weights map[Reason]float64 `yaml:"weights,omitempty" json:"weights,omitempty"`
	// Ladder are the score thresholds of each stage.
	Ladder Ladder `yaml:"ladder,omitempty" json:"ladder,omitempty"`
	// Lockout is how long an account (or a pre-auth address) stays locked
	// out once its score crosses the lockout rung; default 60s.
	Lockout *Duration `yaml:"lockout,omitempty" json:"lockout,omitempty"`
	// ShedFactor multiplies every token cost of a session at the shed
	// stage; default 2 (its rates halve).
	ShedFactor *uint64 `yaml:"shedFactor,omitempty" json:"shedFactor,omitempty"`
	// Disabled turns strikes off: nothing escalates.
	Disabled bool `yaml:"disabled,omitempty" json:"disabled,omitempty"`
}

// Ladder are the strike thresholds, strictly increasing. Defaults: warn 4,
// shed 8, drop 12, disconnect 16, lockout 32.
type Ladder struct {
	Warn       *float64 `yaml:"warn,omitempty" json:"warn,omitempty"`
	Shed       *float64 `yaml:"shed,omitempty" json:"shed,omitempty"`
	Drop       *float64 `yaml:"drop,omitempty" json:"drop,omitempty"`
	Disconnect *float64 `yaml:"disconnect,omitempty" json:"disconnect,omitempty"`
	Lockout    *float64 `yaml:"lockout,omitempty" json:"lockout,omitempty"`
}

// Tables bounds what the gate tracks.
type Tables struct {
	// Sessions is the number of session slots (at most 2^20); default
	// 4,096. The slot table is allocated up front.
	Sessions *uint32 `yaml:"sessions,omitempty" json:"sessions,omitempty"`
	// Accounts, Addresses and Matches bound the keyed tables (at most 2^26
	// each); defaults 100,000, 100,000 and 10,000. A table on core.Limiter
	// allocates its bound up front: 37 bytes a key at 1M keys with 16 shards
	// (38 with 64), more for smaller bounds, whose shards keep a larger
	// share spare for the spread of the hash: the tables take 39 bytes a key
	// at 100,000 and 46 at 10,000 with the 16 shards of GOMAXPROCS 2, and 42
	// and 58 with the 64 shards of GOMAXPROCS 16.
	Accounts  *uint32 `yaml:"accounts,omitempty" json:"accounts,omitempty"`
	Addresses *uint32 `yaml:"addresses,omitempty" json:"addresses,omitempty"`
	Matches   *uint32 `yaml:"matches,omitempty" json:"matches,omitempty"`
	// AccountsPerAddress bounds the account entries one source address may
	// leave behind in the gate's account table that cannot be forgotten
	// yet (no session open, but strikes, a lockout or a limit still
	// running): a login of an account the table does not hold, from an
	// address at its bound, is refused TableFull, so churn from a few
	// addresses cannot fill the table. Default Accounts ÷ 100 (at least
	// 1); at most Accounts.
	AccountsPerAddress *uint32 `yaml:"accountsPerAddress,omitempty" json:"accountsPerAddress,omitempty"`
}

// Escalation configures soft-throttle to lockout escalation in the keyed
// limiter, and what a full table does. Escalation applies to the account
// and address layers; the match layer never escalates (its key is shared
// by every player of a match, so a lockout would refuse them all).
type Escalation struct {
	// Violations denials of one key within Window lock it out for Lockout;
	// 0 turns escalation off. Defaults: 0 (off; the gate's strikes do this
	// job), 8s, 30s.
	Violations *uint32   `yaml:"violations,omitempty" json:"violations,omitempty"`
	Window     *Duration `yaml:"window,omitempty" json:"window,omitempty"`
	Lockout    *Duration `yaml:"lockout,omitempty" json:"lockout,omitempty"`
	// TableFull is "deny" (default: fail closed with reason TableFull) or
	// "allow" (let a key that cannot be tracked through).
	TableFull string `yaml:"tableFull,omitempty" json:"tableFull,omitempty"`
}

// maxStrikePoints bounds strike weights and ladder rungs.
const maxStrikePoints = 1e6

// maxStrikeDrain bounds how long a strike weight or the lockout rung takes
// to drain (points × window ÷ the disconnect rung): the ladder keeps
// scores as nanoseconds of drain in an int64, up to twice the lockout rung
// plus one weight, so this keeps every score far from overflow whatever
// the window. Bounding the points alone does not: a long window or a low
// disconnect rung scales them up.
const maxStrikeDrain = 50 * 365 * 24 * time.Hour

// Defaults (documented on the fields).
const (
	dfltRate             = 30.0
	dfltByteRate         = 480_000.0 // 8,000 bytes per 1/60 s
	dfltByteBurst        = 8_000.0
	dfltMinCharge        = 800
	dfltFrameRate        = 240.0
	dfltFrameBurst       = 128.0
	dfltMaxFrame         = 4_096
	dfltAccountRate      = 120.0
	dfltAccountBurst     = 240.0
	dfltAddressRate      = 60.0
	dfltAddressBurst     = 120.0
	dfltMatchRate        = 2_000.0
	dfltMatchBurst       = 4_000.0
	dfltQueueCommands    = 32
	dfltPendingBytes     = 65_536
	dfltReplayWindow     = 64
	dfltStrikeWindow     = 30 * time.Second
	dfltLockout          = 60 * time.Second
	dfltShedFactor       = 2
	dfltLagCredit        = 5 * time.Second
	maxLagCredit         = time.Hour
	dfltSessions         = 4_096
	dfltAccounts         = 100_000
	dfltAddresses        = 100_000
	dfltMatches          = 10_000
	dfltEscalationWin    = 8 * time.Second
	dfltEscalationLock   = 30 * time.Second
	maxSessions          = 1 << 20
	maxTableKeys         = 1 << 26
	maxReplayWindow      = 1 << 16
	maxQueueCommands     = 1 << 12
	maxShedFactor        = 1 << 10
	dfltLadderWarn       = 4.0
	dfltLadderShed       = 8.0
	dfltLadderDrop       = 12.0
	dfltLadderDisconnect = 16.0
	dfltLadderLockout    = 32.0
)

// DefaultStrikeWeights returns the weight of each reason when the policy
// does not override it: one channel, account or address over its rate is
// light (lag after a freeze trips these too); a match over its rate weighs
// nothing, because the match bucket is shared by everyone in the match and
// the player it refuses is not necessarily the one who spent it; transport
// floods,
// malformed, oversize and replayed traffic are rarely honest and weigh 4; a
// message refused at the drop stage (Lockout) weighs 1 so a flood that goes
// on keeps climbing. Reasons that say nothing about the client (NoSession,
// Locked, TableFull, Closed) weigh 0.
func DefaultStrikeWeights() map[Reason]float64 {
	return map[Reason]float64{
		ChannelLimit:  1,
		AccountLimit:  1,
		MatchLimit:    0,
		AddressLimit:  1,
		InFlightLimit: 1,
		Duplicate:     1,
		QueueFull:     2,
		ByteLimit:     4,
		FrameLimit:    4,
		Oversize:      4,
		Malformed:     4,
		Replay:        4,
		Lockout:       1,
	}
}

// ErrPolicy is the sentinel every policy decoding and validation error
// wraps; test with errors.Is.
var ErrPolicy = errors.New("core: invalid policy")

// PolicyError names the field of a policy that is wrong: its path
// ("channels[2].rate"), the source line when the policy was decoded from a
// file (0 otherwise) and the column when it was YAML, why, and for an
// unknown field the known one it was probably meant to be.
type PolicyError struct {
	Path       string
	Line       int
	Col        int // 0 when not known (JSON, or a check after decoding)
	Msg        string
	Suggestion string // a field name, or ""
	Err        error  // an underlying error (a decode error, *atomicbucket.ConfigError), or nil
}

func (e *PolicyError) Error() string {
	var b strings.Builder
	b.WriteString("core: policy: ")
	if e.Path != "" {
		b.WriteString(e.Path)
	} else {
		b.WriteString("(document)")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	b.WriteString(suggest.Hint(e.Suggestion))
	return b.String()
}

// Unwrap returns ErrPolicy and the underlying error, if any.
func (e *PolicyError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrPolicy, e.Err}
	}
	return []error{ErrPolicy}
}

// Line returns the source line of a field path when the policy was decoded
// from a file, or 0.
func (p *Policy) Line(path string) int { return p.lines[path].line }

// orDefault points an unset optional field at a fresh copy of def.
func orDefault[T any](p **T, def T) {
	if *p == nil {
		*p = &def
	}
}

// normalize fills a budget's defaults: both unset takes (rate, burst);
// a rate alone takes burst max(1, ceil(rate)).
func (b *Budget) normalize(rate, burst float64) {
	if b.Rate == nil {
		b.RateDefaulted = true
		b.Rate = &rate
		if b.Burst == nil {
			b.BurstDefaulted = true
			b.Burst = &burst
		}
		return
	}
	if b.Burst == nil && !math.IsNaN(*b.Rate) {
		b.BurstDefaulted = true
		d := atomicbucket.DefaultBurst(*b.Rate)
		b.Burst = &d
	}
}

// Normalized returns a normalized deep copy of p, leaving p (and anything it
// shares, such as its Channels array) untouched: Normalize on a shallow
// copy would write into the channels the caller still holds.
func (p *Policy) Normalized() Policy {
	c := p.clone()
	c.Normalize()
	return c
}

// Normalize fills every unset field with its default and records which
// channel and budget rates and bursts were defaulted. It copies nothing the
// caller shares: set pointers are kept, unset ones get fresh values. It is
// idempotent.
func (p *Policy) Normalize() {
	for i := range p.Channels {
		c := &p.Channels[i]
		if c.Rate == nil {
			c.RateDefaulted = true
			r := dfltRate
			c.Rate = &r
		}
		if c.Burst == nil {
			c.BurstDefaulted = true
			b := atomicbucket.DefaultBurst(*c.Rate)
			if math.IsNaN(b) || math.IsInf(b, 0) {
				b = 1
			}
			c.Burst = &b
		}
		orDefault(&c.Cost, 1)
		orDefault(&c.RetryAfter, c.Class == ClassRequest)
		if c.Class == ClassInput {
			orDefault(&c.LagCredit, Duration(dfltLagCredit))
		}
	}
	t := &p.Transport
	t.Bytes.normalize(dfltByteRate, dfltByteBurst)
	t.Frames.normalize(dfltFrameRate, dfltFrameBurst)
	orDefault(&t.MinCharge, dfltMinCharge)
	orDefault(&t.MaxFrame, dfltMaxFrame)
	for i := range p.Channels {
		orDefault(&p.Channels[i].MaxSize, *t.MaxFrame)
	}
	p.Account.normalize(dfltAccountRate, dfltAccountBurst)
	p.Address.normalize(dfltAddressRate, dfltAddressBurst)
	p.Match.normalize(dfltMatchRate, dfltMatchBurst)
	q := &p.Queue
	orDefault(&q.Commands, dfltQueueCommands)
	orDefault(&q.PendingBytes, dfltPendingBytes)
	orDefault(&q.ReplayWindow, dfltReplayWindow)
	s := &p.Strikes
	orDefault(&s.Window, Duration(dfltStrikeWindow))
	orDefault(&s.Lockout, Duration(dfltLockout))
	orDefault(&s.ShedFactor, dfltShedFactor)
	orDefault(&s.Ladder.Warn, dfltLadderWarn)
	orDefault(&s.Ladder.Shed, dfltLadderShed)
	orDefault(&s.Ladder.Drop, dfltLadderDrop)
	orDefault(&s.Ladder.Disconnect, dfltLadderDisconnect)
	orDefault(&s.Ladder.Lockout, dfltLadderLockout)
	tb := &p.Tables
	orDefault(&tb.Sessions, dfltSessions)
	orDefault(&tb.Accounts, dfltAccounts)
	orDefault(&tb.Addresses, dfltAddresses)
	orDefault(&tb.Matches, dfltMatches)
	orDefault(&tb.AccountsPerAddress, max(1, *tb.Accounts/100))
	p.Connections.normalize()
	e := &p.Escalation
	orDefault(&e.Violations, 0)
	orDefault(&e.Window, Duration(dfltEscalationWin))
	orDefault(&e.Lockout, Duration(dfltEscalationLock))
	if e.TableFull == "" {
		e.TableFull = "deny"
	}
	p.Fleet.normalize()
}

// StrikeWeight returns the weight a denial for r adds: the policy's
// override, or the default.
func (s *Strikes) StrikeWeight(r Reason) float64 {
	if w, ok := s.Weights[r]; ok {
		return w
	}
	return defaultStrikeWeights[r]
}

// defaultStrikeWeights is read by StrikeWeight and never written: one map,
// instead of a fresh one per lookup.
var defaultStrikeWeights = DefaultStrikeWeights()

// Validate reports every invalid field of the policy, each as a
// *PolicyError naming its path (and source line when decoded), joined with
// errors.Join; nil if the policy is usable. It validates a normalized copy,
// so unset fields are fine.
func (p *Policy) Validate() error {
	q := p.Normalized()
	return q.validate()
}

// validate checks a normalized policy.
func (p *Policy) validate() error {
	v := validator{lines: p.lines}
	names := map[string]int{}
	for i := range p.Channels {
		c := &p.Channels[i]
		path := fmt.Sprintf("channels[%d]", i)
		switch {
		case c.Name == "":
			v.add(path+".name", "is required")
		case strings.TrimSpace(c.Name) != c.Name:
			v.add(path+".name", "has leading or trailing space")
		case slices.Contains(statsRowNames[:], c.Name):
			// GateStats names its extra rows so: Count would read the
			// channel's row and theirs as one.
			v.add(path+".name", fmt.Sprintf("%q is reserved for a row of the gate's stats", c.Name))
		default:
			if j, dup := names[c.Name]; dup {
				v.add(path+".name", fmt.Sprintf("%q is already the name of channels[%d]", c.Name, j))
			}
			names[c.Name] = i
		}
		if c.Class == ClassUnset {
			v.add(path+".class", "is required (input, request or predicted)")
		}
		v.limit(path, *c.Rate, *c.Burst)
		if *c.Cost < 1 {
			v.add(path+".cost", "must be at least 1")
		} else if b := *c.Burst; b >= 1 && float64(*c.Cost) > math.Floor(b) {
			v.add(path+".cost", fmt.Sprintf("%d is more than the burst %g: no message could ever pass", *c.Cost, b))
		}
		if *c.MaxSize < 1 {
			v.add(path+".maxSize", "must be at least 1")
		}
		if c.InFlight > 0 && c.Class != ClassRequest {
			v.add(path+".inFlight", "applies to request channels only")
		}
		if c.LagCredit != nil {
			switch lc := *c.LagCredit; {
			case c.Class != ClassInput && lc != 0:
				v.add(path+".lagCredit", "applies to input channels only")
			case lc < 0 || lc > Duration(maxLagCredit):
				v.add(path+".lagCredit", fmt.Sprintf("must be between 0 and %v", maxLagCredit))
			}
		}
		if c.InFlight > math.MaxInt32 {
			// The gate counts in-flight requests in an int32: a larger cap
			// would wrap negative and count nothing.
			v.add(path+".inFlight", fmt.Sprintf("must be between 0 and %d", math.MaxInt32))
		}
	}
	t := &p.Transport
	v.budget("transport.bytes", &t.Bytes)
	v.budget("transport.frames", &t.Frames)
	if *t.MaxFrame < 1 {
		v.add("transport.maxFrame", "must be at least 1")
	}
	v.budget("account", &p.Account)
	v.budget("address", &p.Address)
	v.budget("match", &p.Match)
	if c := *p.Queue.Commands; c < 1 || c > maxQueueCommands {
		v.add("queue.commands", fmt.Sprintf("must be between 1 and %d", maxQueueCommands))
	}
	if *p.Queue.PendingBytes < 1 {
		v.add("queue.pendingBytes", "must be at least 1")
	}
	if w := *p.Queue.ReplayWindow; w < 1 || w > maxReplayWindow {
		v.add("queue.replayWindow", fmt.Sprintf("must be between 1 and %d", maxReplayWindow))
	}
	s := &p.Strikes
	if *s.Window <= 0 {
		v.add("strikes.window", "must be positive")
	}
	if *s.Lockout <= 0 {
		v.add("strikes.lockout", "must be positive")
	}
	if f := *s.ShedFactor; f < 1 || f > maxShedFactor {
		v.add("strikes.shedFactor", fmt.Sprintf("must be between 1 and %d", maxShedFactor))
	}
	for _, r := range slices.Sorted(maps.Keys(s.Weights)) {
		w := s.Weights[r]
		path := "strikes.weights." + r.String()
		switch {
		case !r.Valid() || r == None:
			v.add(path, "is not a reason that can earn a strike")
		case math.IsNaN(w) || math.IsInf(w, 0) || w < 0:
			v.add(path, "must be finite and at least 0")
		case w > maxStrikePoints:
			v.add(path, fmt.Sprintf("must be at most %g", float64(maxStrikePoints)))
		}
	}
	rungs := []struct {
		name string
		v    float64
	}{{"warn", *s.Ladder.Warn}, {"shed", *s.Ladder.Shed}, {"drop", *s.Ladder.Drop}, {"disconnect", *s.Ladder.Disconnect}, {"lockout", *s.Ladder.Lockout}}
	prev := 0.0
	for i, r := range rungs {
		path := "strikes.ladder." + r.name
		switch {
		case math.IsNaN(r.v) || math.IsInf(r.v, 0) || r.v <= 0:
			v.add(path, "must be finite and greater than 0")
		case r.v > maxStrikePoints:
			v.add(path, fmt.Sprintf("must be at most %g", float64(maxStrikePoints)))
		case i > 0 && r.v <= prev:
			v.add(path, fmt.Sprintf("must be greater than %s (%g)", rungs[i-1].name, prev))
		}
		prev = r.v
	}
	if d := *s.Ladder.Disconnect; *s.Window > 0 && d > 0 && !math.IsInf(d, 0) {
		tooLong := func(path string, points float64) {
			if drain := points * float64(*s.Window) / d; drain > float64(maxStrikeDrain) {
				v.add(path, fmt.Sprintf("takes %.3g years to drain at window %v and disconnect %g; at most %v", drain/float64(365*24*time.Hour), time.Duration(*s.Window), d, "50 years"))
			}
		}
		// Every weight in force, the defaults included: a default weight
		// far above a small ladder overflows as surely as a written one.
		for r := Reason(0); r < numReasons; r++ {
			if w := s.StrikeWeight(r); w > 0 && r.Valid() && r != None {
				tooLong("strikes.weights."+r.String(), w)
			}
		}
		tooLong("strikes.ladder.lockout", *s.Ladder.Lockout)
	}
	tb := &p.Tables
	if n := *tb.Sessions; n < 1 || n > maxSessions {
		v.add("tables.sessions", fmt.Sprintf("must be between 1 and %d", maxSessions))
	}
	for _, f := range []struct {
		path string
		n    uint32
	}{{"tables.accounts", *tb.Accounts}, {"tables.addresses", *tb.Addresses}, {"tables.matches", *tb.Matches}} {
		if f.n < 1 || f.n > maxTableKeys {
			v.add(f.path, fmt.Sprintf("must be between 1 and %d", maxTableKeys))
		}
	}
	if n, a := *tb.AccountsPerAddress, *tb.Accounts; a >= 1 && a <= maxTableKeys && (n < 1 || n > a) {
		v.add("tables.accountsPerAddress", fmt.Sprintf("must be between 1 and tables.accounts (%d)", *tb.Accounts))
	}
	p.Connections.validate(&v)
	e := &p.Escalation
	if *e.Violations > shardmap.MaxCount {
		v.add("escalation.violations", fmt.Sprintf("must be at most %d", shardmap.MaxCount))
	}
	// Checked even with escalation off: the keyed limiters are built with
	// them either way, and would refuse a negative one.
	if *e.Window < 0 || *e.Violations > 0 && *e.Window == 0 {
		v.add("escalation.window", "must be positive")
	}
	if *e.Lockout < 0 || *e.Violations > 0 && *e.Lockout == 0 {
		v.add("escalation.lockout", "must be positive")
	}
	if e.TableFull != "deny" && e.TableFull != "allow" {
		v.add("escalation.tableFull", fmt.Sprintf("%q is not deny or allow", e.TableFull))
	}
	p.validateFleet(&v)
	return v.err()
}

type validator struct {
	lines map[string]srcPos
	errs  []error
}

func (v *validator) add(path, msg string) { v.addErr(path, msg, nil) }

func (v *validator) addErr(path, msg string, err error) {
	at := v.lines[path]
	if at.line == 0 { // a defaulted field: point at its parent
		for p := path; at.line == 0 && p != ""; {
			i := strings.LastIndexAny(p, ".[")
			if i < 0 {
				break
			}
			p = p[:i]
			at = v.lines[p]
		}
	}
	v.errs = append(v.errs, &PolicyError{Path: path, Line: at.line, Col: at.col, Msg: msg, Err: err})
}

// limit validates a rate and burst exactly as the bucket encoding will
// (finite, rate > 0, burst ≥ 1, within the encoding's range), naming the
// field at fault.
func (v *validator) limit(path string, rate, burst float64) {
	if burst == 0 { // NewLimit would read 0 as "default"; here it was written
		v.addErr(path+".burst", "0 must be at least 1", atomicbucket.ErrBurst)
		return
	}
	if _, err := atomicbucket.NewLimit(rate, burst, 0); err != nil {
		var ce *atomicbucket.ConfigError
		field, msg := "rate", err.Error()
		if errors.As(err, &ce) {
			field, msg = ce.Field, fmt.Sprintf("%v %s", ce.Value, ce.Reason)
		}
		v.addErr(path+"."+field, msg, err)
	}
}

func (v *validator) budget(path string, b *Budget) {
	if b.Disabled {
		return
	}
	burst := 1.0 // a burst left unset beside a NaN rate: the rate's error is the one to report
	if b.Burst != nil {
		burst = *b.Burst
	}
	v.limit(path, *b.Rate, burst)
}

func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return errors.Join(v.errs...)
}

// clone returns a deep copy: pointers and the weight map are copied so the
// copy can be normalized without touching the original.
func (p *Policy) clone() Policy {
	q := *p
	q.Channels = make([]Channel, len(p.Channels))
	for i, c := range p.Channels {
		c.Rate, c.Burst, c.Cost, c.MaxSize, c.RetryAfter = cp(c.Rate), cp(c.Burst), cp(c.Cost), cp(c.MaxSize), cp(c.RetryAfter)
		c.LagCredit = cp(c.LagCredit)
		q.Channels[i] = c
	}
	cpBudget := func(b *Budget) { b.Rate, b.Burst = cp(b.Rate), cp(b.Burst) }
	cpBudget(&q.Transport.Bytes)
	cpBudget(&q.Transport.Frames)
	cpBudget(&q.Account)
	cpBudget(&q.Address)
	cpBudget(&q.Match)
	q.Transport.MinCharge, q.Transport.MaxFrame = cp(q.Transport.MinCharge), cp(q.Transport.MaxFrame)
	q.Queue.Commands, q.Queue.PendingBytes, q.Queue.ReplayWindow = cp(q.Queue.Commands), cp(q.Queue.PendingBytes), cp(q.Queue.ReplayWindow)
	s := &q.Strikes
	s.Window, s.Lockout, s.ShedFactor = cp(s.Window), cp(s.Lockout), cp(s.ShedFactor)
	s.Ladder.Warn, s.Ladder.Shed, s.Ladder.Drop, s.Ladder.Disconnect, s.Ladder.Lockout =
		cp(s.Ladder.Warn), cp(s.Ladder.Shed), cp(s.Ladder.Drop), cp(s.Ladder.Disconnect), cp(s.Ladder.Lockout)
	if p.Strikes.Weights != nil {
		s.Weights = make(map[Reason]float64, len(p.Strikes.Weights))
		for r, w := range p.Strikes.Weights {
			s.Weights[r] = w
		}
	}
	tb := &q.Tables
	tb.Sessions, tb.Accounts, tb.Addresses, tb.Matches = cp(tb.Sessions), cp(tb.Accounts), cp(tb.Addresses), cp(tb.Matches)
	tb.AccountsPerAddress = cp(tb.AccountsPerAddress)
	q.Connections = p.Connections.clone()
	e := &q.Escalation
	e.Violations, e.Window, e.Lockout = cp(e.Violations), cp(e.Window), cp(e.Lockout)
	q.Fleet = p.Fleet.clone()
	return q
}

func cp[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// ChannelIndex returns the index of the named channel (the Message.Kind to
// send), or -1.
func (p *Policy) ChannelIndex(name string) int {
	for i := range p.Channels {
		if p.Channels[i].Name == name {
			return i
		}
	}
	return -1
}
