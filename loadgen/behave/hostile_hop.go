package behave

import "github.com/sluicedev/sluice/loadgen/wire"

// ServerHop spreads one account's traffic over every game server of a
// fleet run (RunSpec.Servers): its clients (give them one account with
// Population.PerAccount) start on their assigned servers, round-robin, and
// each floods requests at a steady pace; after each throttle (a request
// rejected, or the connection ended by the server) it reconnects, under
// the same account, to the next server (Action.Server = ServerNext). A
// limit each server keeps for itself admits it up to the servers × the
// account's rate; a fleet-wide one (the policy's fleet section) holds the
// account to its rate plus the fleet's stated overshoot. With one server
// it is a request flood that reconnects after each rejection.
type ServerHop struct {
	Persist `yaml:",inline"`
	// Kind: the request channel it floods, chat or purchase (requests are
	// answered, so a throttle is seen). Default chat.
	Kind Kind `yaml:"kind"`
	// PerSecond: requests per second (±10% jitter). Default 200.
	PerSecond float64 `yaml:"per_second"`
	// Size: payload bytes. Default 8.
	Size int `yaml:"size"`
}

// Name returns "server-hop".
func (ServerHop) Name() string { return "server-hop" }

func (h ServerHop) kind() Kind { return orKind(h.Kind, KindChat) }

// Validate checks the parameters.
func (h ServerHop) Validate() error {
	c := checker{owner: h.Name()}
	h.Persist.check(&c)
	if t, _, _ := h.kind().Wire(); t != wire.TypeRequest {
		c.fail("Kind", h.Kind, "must be chat or purchase: a request, whose rejection the client sees")
	}
	c.rate("PerSecond", h.PerSecond, false)
	c.intIn("Size", h.Size, 0, wire.MaxFrameLimit-wire.RequestOverhead)
	return c.err
}

// Stream returns the flood, which hops on throttles (see hopStream).
func (h ServerHop) Stream(c *Client) Stream {
	subs, t0 := h.Persist.streams(c, false)
	p := period(orFloat(h.PerSecond, 200))
	tmpl := Action{Op: OpSend, Kind: h.kind(), Size: orInt(h.Size, 8), Count: 1}
	return &hopStream{inner: newMerge(append(subs, newPhasedTicker(subRand(c, subAttack), tmpl, t0, p, p/10, c.End))...)}
}

// hopStream is ServerHop's stream: its inner actions, with a connect to
// the next server before the first send after a throttle, and every retry
// to the next server too (the one it was on ended its connection).
type hopStream struct {
	inner   Stream
	hop     bool   // throttled since the last hop
	held    Action // the send the hop's connect comes before
	holding bool
}

// Throttled implements ThrottleAware.
func (h *hopStream) Throttled(int64) { h.hop = true }

// Next implements Stream.
func (h *hopStream) Next(a *Action) bool {
	if h.holding {
		h.holding = false
		*a = h.held
		return true
	}
	if !h.inner.Next(a) {
		return false
	}
	switch {
	case a.Op == OpRetry:
		a.Server = ServerNext
		h.hop = false
	case a.Op == OpSend && h.hop:
		h.hop = false
		h.held, h.holding = *a, true
		*a = Action{At: a.At, Op: OpConnect, Server: ServerNext}
	}
	return true
}
