package behave

import "time"

// SlotHold holds server slots: each client connects once, at a uniform time
// in the first ConnectSpread after its arrival, says Hello under its own
// account (or, with NoHello, says nothing, and is closed at the hello
// timeout), and then only pings, rarely, to stay within the idle timeout.
// Whenever it is down (refused, closed) it reconnects after RetryEvery. Put
// a population of them on one source address (per_address = count) and one
// host holds as many slots as the server lets one address have.
type SlotHold struct {
	// ConnectSpread: the first connect is at a uniform time in
	// [0, ConnectSpread) after the client's arrival. Default 8s.
	// Negative: at the arrival.
	ConnectSpread time.Duration `yaml:"connect_spread"`
	// PingEvery: time between pings (±10%). Default 20s.
	PingEvery time.Duration `yaml:"ping_every"`
	// RetryEvery: while down, reconnect this often. Default 10s.
	// Negative: never.
	RetryEvery time.Duration `yaml:"retry_every"`
	// NoHello: dial and never say Hello (OpDial), holding a
	// pre-authentication slot until the server's hello timeout.
	NoHello bool `yaml:"no_hello"`
}

// Name returns "slot-hold".
func (SlotHold) Name() string { return "slot-hold" }

// Validate checks the parameters.
func (h SlotHold) Validate() error {
	c := checker{owner: h.Name()}
	c.dur("ConnectSpread", h.ConnectSpread, true)
	c.dur("PingEvery", h.PingEvery, false)
	c.dur("RetryEvery", h.RetryEvery, true)
	return c.err
}

// Stream returns the connect, the retries and the pings.
func (h SlotHold) Stream(c *Client) Stream {
	op := OpConnect
	if h.NoHello {
		op = OpDial
	}
	spread := h.ConnectSpread
	if spread == 0 {
		spread = 8 * time.Second
	}
	first, t0 := firstConnect(c, spread, op)
	subs := []Stream{first}
	if every := orDur(h.RetryEvery, 10*time.Second); every > 0 {
		// A retry reconnects only while down, the way the first connect
		// was made (with or without a Hello).
		subs = append(subs, newTicker(subRand(c, subRetry), Action{Op: OpRetry}, t0+every, every, every/10, c.End))
	}
	if !h.NoHello {
		p := orDur(h.PingEvery, 20*time.Second)
		subs = append(subs, newPhasedTicker(subRand(c, subAttack), Action{Op: OpSend, Kind: KindPing}, t0, p, p/10, c.End))
	}
	return newMerge(subs...)
}

// NATChurn is a hostile host behind a NAT: it opens a connection, logs
// in, and walks away a quarter of Every later, again and again, Every
// apart: handshakes that are churned away, never played, spending the
// pre-authentication budget of its source address. Put it on the address
// of an honest crowd (same_address_as) to see what it costs the crowd's
// logins.
type NATChurn struct {
	// ConnectSpread: the first handshake is at a uniform time in
	// [0, ConnectSpread) after the client's arrival. Default 1s.
	// Negative: at the arrival.
	ConnectSpread time.Duration `yaml:"connect_spread"`
	// Every: mean time between handshakes (uniform in [T/2, 3T/2]).
	// Default 40ms.
	Every time.Duration `yaml:"every"`
}

// Name returns "nat-churn".
func (NATChurn) Name() string { return "nat-churn" }

// Validate checks the parameters.
func (n NATChurn) Validate() error {
	c := checker{owner: n.Name()}
	c.dur("ConnectSpread", n.ConnectSpread, true)
	c.dur("Every", n.Every, false)
	return c.err
}

// Stream returns the churned handshakes: a connect, and a close a quarter
// of Every later (before the next connect, which comes at least half of
// Every later).
func (n NATChurn) Stream(c *Client) Stream {
	_, t0 := firstConnect(c, n.ConnectSpread, OpConnect)
	every := orDur(n.Every, 40*time.Millisecond)
	return newEpisodes(subRand(c, subAttack), t0, c.End, spreadGap(every),
		func(r *Rand, at int64, q []Action) []Action {
			return append(q, Action{At: at, Op: OpConnect}, Action{At: at + every/4, Op: OpDisconnect})
		})
}

// SparseIDs is an honest player whose requests carry sparse ids (see
// ReuseSparse) instead of ids counting up: a client library that draws its
// ids at random, or numbers them per subsystem. Nothing about it is
// hostile, and a gate must not refuse or punish it for its ids.
type SparseIDs struct {
	Honest `yaml:",inline"`
}

// Name returns "sparse-ids".
func (SparseIDs) Name() string { return "sparse-ids" }

// Validate checks the parameters.
func (s SparseIDs) Validate() error { return s.Honest.Validate() }

// Stream returns Honest's actions with every fresh request id sparse.
func (s SparseIDs) Stream(c *Client) Stream { return &sparseStream{s.Honest.Stream(c)} }

type sparseStream struct{ Stream }

func (s *sparseStream) Next(a *Action) bool {
	if !s.Stream.Next(a) {
		return false
	}
	if a.Op == OpSend && a.Reuse == ReuseNone && (a.Kind == KindChat || a.Kind == KindPurchase) {
		a.Reuse = ReuseSparse
	}
	return true
}

// HalfClose is a client that sends a burst of requests and then shuts
// down its sending side (half-close: shutdown(SHUT_WR)), still reading: it
// expects the answers to what the server admitted before the close. It
// does so every Every, on a new connection each time.
type HalfClose struct {
	// ConnectSpread: the first connect is at a uniform time in
	// [0, ConnectSpread) after the client's arrival. Default 1s.
	// Negative: at the arrival.
	ConnectSpread time.Duration `yaml:"connect_spread"`
	// Every: mean time between rounds (uniform in [T/2, 3T/2]). Default 4s:
	// with the default Requests, 0.75 chats a second, within the reference
	// policy's chat rate (1/s), which an account keeps across its
	// connections.
	Every time.Duration `yaml:"every"`
	// Requests: chat requests sent in one write before the half-close.
	// Default 3 (within the reference policy's chat burst).
	Requests int `yaml:"requests"`
}

// Name returns "half-close".
func (HalfClose) Name() string { return "half-close" }

// Validate checks the parameters.
func (h HalfClose) Validate() error {
	c := checker{owner: h.Name()}
	c.dur("ConnectSpread", h.ConnectSpread, true)
	c.dur("Every", h.Every, false)
	c.intIn("Requests", h.Requests, 0, maxCount)
	return c.err
}

// Stream returns the rounds: connect, the requests a moment after the
// hello's answer could have come, and the half-close.
func (h HalfClose) Stream(c *Client) Stream {
	_, t0 := firstConnect(c, h.ConnectSpread, OpConnect)
	every := orDur(h.Every, 4*time.Second)
	n := orInt(h.Requests, 3)
	return newEpisodes(subRand(c, subAttack), t0, c.End, spreadGap(every),
		func(r *Rand, at int64, q []Action) []Action {
			send := at + int64(100*time.Millisecond)
			return append(q, Action{At: at, Op: OpConnect},
				Action{At: send, Op: OpSend, Kind: KindChat, Size: 16, Count: n},
				Action{At: send, Op: OpHalfClose})
		})
}
