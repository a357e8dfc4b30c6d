package loadgen

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
// seed, its identity and the run's window. Plan.Clients makes them.
type Client struct {
	Index      int       // position in the plan, across every population
	Population int       // index into Plan.Populations (and the recorder's labels)
	Label      string    // the population's name, sent in Hello
	Seed       uint64    // ClientSeed(plan seed, Index)
	Account    uint64    // the account its Hello carries; shared within a PerAccount group
	Addr       uint32    // the source-address group it dials from; shared within a PerAddress group
	Start, End int64     // the run's window in ns; no action is at or after End
	Behaviour  Behaviour // what it does
}

// Stream returns the client's actions.
func (c *Client) Stream() Stream { return c.Behaviour.Stream(c) }

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
}

// Plan is a whole run's client population: what a scenario expands to.
type Plan struct {
	Seed        uint64
	Duration    time.Duration // the run's length: every client's window is [0, Duration)
	Populations []Population
}

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

// Clients expands the plan into its clients, in population order. Accounts
// and address groups are numbered from 1 across the whole plan, so no two
// populations share one unless a layout says so. The plan must be valid.
func (p *Plan) Clients() []Client {
	var out []Client
	var account uint64
	var addr uint32
	for pi, pop := range p.Populations {
		perAcct, perAddr := max(pop.PerAccount, 1), max(pop.PerAddress, 1)
		for i := 0; i < pop.Clients; i++ {
			if i%perAcct == 0 {
				account++
			}
			if i%perAddr == 0 {
				addr++
			}
			idx := len(out)
			out = append(out, Client{
				Index:      idx,
				Population: pi,
				Label:      pop.Name,
				Seed:       ClientSeed(p.Seed, idx),
				Account:    account,
				Addr:       addr,
				Start:      0,
				End:        int64(p.Duration),
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
