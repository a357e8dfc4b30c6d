package behave

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// Behaviour is a kind of client: a seeded generator of timed actions,
// configured by its exported fields (each documented with its default; a
// zero field takes the default). Stream must be deterministic: the same
// client (seed, identity, window) always yields the same actions, whatever
// the driver. Behaviours are values that scenario files decode into (see
// NewBehaviour); they are safe for concurrent use once configured, since
// Stream only reads them.
type Behaviour interface {
	// Name returns the behaviour's registered name.
	Name() string
	// Validate reports the first parameter out of range as a *ParamError.
	Validate() error
	// Stream returns the client's actions. The behaviour must be valid.
	Stream(c *Client) Stream
}

// ErrParam is wrapped by every *ParamError.
var ErrParam = errors.New("loadgen: invalid parameter")

// ParamError names a behaviour or plan field that is out of range.
type ParamError struct {
	Owner  string // the behaviour's name, "plan" or "population <name>"
	Field  string
	Value  any
	Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("loadgen: %s: %s = %v: %s", e.Owner, e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrParam.
func (e *ParamError) Unwrap() error { return ErrParam }

// Client is one simulated player (or attacker): its place in the plan, its
// seed, its identity, its population's window and its arrival. Plan.Clients
// makes them.
type Client struct {
	Index      int    // position in the plan, across every population
	Population int    // index into Plan.Populations (and the recorder's labels)
	Label      string // the population's name, sent in Hello
	Seed       uint64 // ClientSeed(plan seed, Index)
	Account    uint64 // the account its Hello carries; shared within a PerAccount group
	Addr       uint32 // the source-address group it dials from; shared within a PerAddress group
	// Start and End are the population's window in ns since the run's
	// start; no action is at or after End, and a worker closes the
	// client's connection once it is over (see Worker).
	Start, End int64
	// Arrive is when the client arrives (Start ≤ Arrive; at or after End
	// it never acts): behaviours start their first connect from it (see
	// Arrival). A zero Arrive means Start.
	Arrive    int64
	Behaviour Behaviour // what it does
}

// Stream returns the client's actions.
func (c *Client) Stream() Stream { return c.Behaviour.Stream(c) }

// Arrival says when a population's clients arrive within its window. The
// zero value is "all". Behaviours add their own connect jitter (a
// ConnectSpread, default 1s) after the arrival.
type Arrival struct {
	// Kind is "all" (the default: every client at Start), "ramp" (evenly
	// over Over: client i of n at Start + i·Over/n) or "poisson"
	// (exponential gaps at Rate clients per second from Start, drawn from
	// the plan's seed and the population's index).
	Kind string
	// Over is the ramp's length; default the population's window.
	Over time.Duration
	// Rate is the Poisson arrival rate in clients per second (required
	// for "poisson"; at most 1e6).
	Rate float64
}

// Population is a group of clients with one behaviour and one identity
// layout.
type Population struct {
	// Name labels every client of the population (in Hello, and in the
	// recorder's tables). Required, unique, at most 255 bytes.
	Name string
	// Clients is how many clients the population has (≥ 1).
	Clients   int
	Behaviour Behaviour
	// PerAddress is how many clients share one source address: a NAT
	// crowd (≤ 1: one address each).
	PerAddress int
	// PerAccount is how many clients share one account: a hot key hammered
	// from many connections (≤ 1: one account each).
	PerAccount int
	// SameAddressAs names an earlier population whose first source
	// address every client of this one dials from (PerAddress is then
	// ignored): a host behind the same NAT as a crowd. "" for addresses
	// of its own.
	SameAddressAs string
	// Arrival says when the clients arrive within the window.
	Arrival Arrival
	// Start and Stop are the population's active window within the run:
	// its clients act in [Start, Stop) (zero Stop: the end of the run) and
	// leave after it. 0 ≤ Start < Stop ≤ the plan's Duration.
	Start, Stop time.Duration
	// Hostile marks the population's role for reports (its admitted
	// traffic counts against the policy); the run itself ignores it.
	Hostile bool
	// Transport is what the population's clients speak the protocol over
	// (a transport name of loadgen/drive: tcp, ws, udp); "" is the run's
	// (loadgen.RunSpec.Transport).
	Transport string
}

// Window returns the population's window in ns within a run of length d.
func (pop *Population) Window(d time.Duration) (start, end int64) {
	end = int64(d)
	if pop.Stop > 0 {
		end = int64(pop.Stop)
	}
	return int64(pop.Start), end
}

// Plan is a whole run's client population: what a scenario expands to.
type Plan struct {
	Seed        uint64
	Duration    time.Duration // the run's length: every client's window is within [0, Duration)
	Populations []Population
	// Segment, when its Of is more than 1, keeps only this segment's share
	// of the clients (see Segment); the zero value is the whole plan.
	Segment Segment
}

// Segment is one of Of deterministic shares of a plan, for a run split
// over Of load generators (sluice run --segment I/N): segment Index keeps
// the clients whose Index mod Of is Index, so that the Of segments
// together hold every client exactly once and each a mix of every
// population. A client keeps everything it has in the whole plan (its
// Index, Seed, Account, Addr and arrival), so it sends the same traffic in
// any segment. Clients that share a key (a PerAccount or PerAddress group)
// can be dealt to different segments: the same account or address group
// then connects from several generators at once, which over loopback
// reaches one server as one address and on a fleet of machines as
// several. The zero value, and Of 1, is the whole plan.
type Segment struct {
	Index, Of int
}

// Whole reports whether s is the whole plan.
func (s Segment) Whole() bool { return s.Of <= 1 }

// String is "I/N", as --segment takes it ("0/1" is the whole plan as one
// segment; "" the zero value).
func (s Segment) String() string {
	if s.Of == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Of)
}

// holds reports whether the client of plan index idx is in the segment.
func (s Segment) holds(idx int) bool { return s.Whole() || idx%s.Of == s.Index }

// MaxClients bounds a plan's total number of clients.
const MaxClients = 1 << 20

// MaxDuration bounds a plan's duration.
const MaxDuration = 24 * time.Hour

// Validate checks the plan and every behaviour in it.
func (p *Plan) Validate() error {
	if p.Duration <= 0 || p.Duration > MaxDuration {
		return &ParamError{"plan", "Duration", p.Duration, "must be in (0, 24h]"}
	}
	if len(p.Populations) == 0 {
		return &ParamError{"plan", "Populations", 0, "need at least one"}
	}
	if sg := p.Segment; sg.Of < 0 || sg.Of > MaxClients || !sg.Whole() && (sg.Index < 0 || sg.Index >= sg.Of) || sg.Whole() && sg.Index != 0 {
		return &ParamError{"plan", "Segment", sg, "must be I/N with 0 ≤ I < N"}
	}
	seen := map[string]bool{}
	total := 0
	for _, pop := range p.Populations {
		owner := "population " + pop.Name
		switch {
		case pop.Name == "" || len(pop.Name) > wire.MaxLabel:
			return &ParamError{owner, "Name", pop.Name, "must be 1 to 255 bytes"}
		case seen[pop.Name]:
			return &ParamError{owner, "Name", pop.Name, "is used twice"}
		case pop.Clients < 1:
			return &ParamError{owner, "Clients", pop.Clients, "must be at least 1"}
		case pop.Behaviour == nil:
			return &ParamError{owner, "Behaviour", nil, "is required"}
		}
		if pop.Start < 0 || pop.Start >= p.Duration {
			return &ParamError{owner, "Start", pop.Start, "must be in [0, Duration)"}
		}
		if pop.Stop != 0 && (pop.Stop <= pop.Start || pop.Stop > p.Duration) {
			return &ParamError{owner, "Stop", pop.Stop, "must be 0 (the end of the run) or in (Start, Duration]"}
		}
		switch a := pop.Arrival; a.Kind {
		case "", ArrivalAll:
		case ArrivalRamp:
			if a.Over < 0 || a.Over > MaxDuration {
				return &ParamError{owner, "Arrival.Over", a.Over, "must be in [0, 24h]"}
			}
		case ArrivalPoisson:
			if !(a.Rate > 0 && a.Rate <= maxRate) {
				return &ParamError{owner, "Arrival.Rate", a.Rate, fmt.Sprintf("must be in (0, %g] clients per second", float64(maxRate))}
			}
		default:
			return &ParamError{owner, "Arrival.Kind", a.Kind, "must be all, ramp or poisson"}
		}
		if pop.SameAddressAs != "" && !seen[pop.SameAddressAs] {
			return &ParamError{owner, "SameAddressAs", pop.SameAddressAs, "must name an earlier population"}
		}
		seen[pop.Name] = true
		total += pop.Clients
		if total > MaxClients {
			return &ParamError{owner, "Clients", pop.Clients, fmt.Sprintf("the plan's total passes %d", MaxClients)}
		}
		if err := pop.Behaviour.Validate(); err != nil {
			return fmt.Errorf("population %s: %w", pop.Name, err)
		}
	}
	return nil
}

// Labels returns the populations' names in order: the recorder's labels.
func (p *Plan) Labels() []string {
	out := make([]string, len(p.Populations))
	for i, pop := range p.Populations {
		out[i] = pop.Name
	}
	return out
}

// The arrival kinds.
const (
	ArrivalAll     = "all"
	ArrivalRamp    = "ramp"
	ArrivalPoisson = "poisson"
)

// arrivals yields the arrival times of a population's clients in order.
type arrivals struct {
	a          Arrival
	start, end int64
	n          int
	rng        *Rand
	t          int64
}

func newArrivals(seed uint64, pi int, pop *Population, d time.Duration) *arrivals {
	start, end := pop.Window(d)
	a := &arrivals{a: pop.Arrival, start: start, end: end, n: pop.Clients, t: start}
	if a.a.Kind == ArrivalPoisson {
		a.rng = NewRand(Mix64(seed ^ Mix64(uint64(pi)^0xa441_7a1)))
	}
	return a
}

// at returns the arrival of client i (called for i = 0, 1, ... in order).
func (a *arrivals) at(i int) int64 {
	switch a.a.Kind {
	case ArrivalRamp:
		over := int64(a.a.Over)
		if over == 0 {
			over = a.end - a.start
		}
		// i·over/n without overflow: over ≤ 24h < 2^47 and n ≤ 2^20.
		return a.start + int64(float64(i)*float64(over)/float64(a.n))
	case ArrivalPoisson:
		if a.t < a.end { // past the end nothing more arrives; stop drawing
			a.t += a.rng.Exp(period(a.a.Rate))
		}
		return a.t
	}
	return a.start
}

// Clients expands the plan into its clients, in population order. Accounts
// and address groups are numbered from 1 across the whole plan, so no two
// populations share one unless a layout says so. Each client's window is
// its population's, and its arrival follows the population's Arrival. The
// plan must be valid.
func (p *Plan) Clients() []Client {
	var out []Client
	var account uint64
	var addr uint32
	next := 0 // the next client's index in the whole plan
	firstAddr := map[string]uint32{}
	for pi := range p.Populations {
		pop := &p.Populations[pi]
		perAcct, perAddr := max(pop.PerAccount, 1), max(pop.PerAddress, 1)
		shared, share := firstAddr[pop.SameAddressAs]
		if share {
			firstAddr[pop.Name] = shared
		} else {
			firstAddr[pop.Name] = addr + 1
		}
		start, end := pop.Window(p.Duration)
		arr := newArrivals(p.Seed, pi, pop, p.Duration)
		for i := 0; i < pop.Clients; i++ {
			if i%perAcct == 0 {
				account++
			}
			if i%perAddr == 0 && pop.SameAddressAs == "" {
				addr++
			}
			at := addr
			if share && pop.SameAddressAs != "" {
				at = shared
			}
			idx := next
			next++
			arrive := arr.at(i) // drawn for every client: a Poisson arrival follows the one before it
			if !p.Segment.holds(idx) {
				continue
			}
			out = append(out, Client{
				Index:      idx,
				Population: pi,
				Label:      pop.Name,
				Seed:       ClientSeed(p.Seed, idx),
				Account:    account,
				Addr:       at,
				Start:      start,
				End:        end,
				Arrive:     arrive,
				Behaviour:  pop.Behaviour,
			})
		}
	}
	return out
}

// Split deals clients to n workers round-robin (client i to worker i mod
// n), so each worker gets a mix of every population. n < 1 counts as 1.
func Split(clients []Client, n int) [][]Client {
	n = max(n, 1)
	out := make([][]Client, n)
	for i := range clients {
		out[i%n] = append(out[i%n], clients[i])
	}
	return out
}
