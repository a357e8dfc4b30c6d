package behave

import (
	"time"
)

// Sub-stream numbers for SubSeed: each of a client's generators draws from
// its own sequence, so adding a stream to a behaviour never changes what
// the others draw.
const (
	subConnect = iota
	subMove
	subAbility
	subChat
	subPurchase
	subPing
	subFreeze
	subDrop
	subRestart
	subAttack
	subRetry
	subExtra // channel-hop targets take subExtra, subExtra+1, ...
)

func subRand(c *Client, n int) *Rand { return NewRand(SubSeed(c.Seed, n)) }

// firstConnect returns a client's first connect (op: OpConnect or OpDial)
// and its time, drawn uniformly in [A, A+spread) (spread 0: 1s; negative:
// A itself), A the client's arrival (its window's Start when Arrive is
// earlier).
func firstConnect(c *Client, spread time.Duration, op Op) (Stream, int64) {
	d := max(orDur(spread, time.Second), 0) // negative: none, clamped before d-1 can wrap
	t0 := max(c.Arrive, c.Start) + subRand(c, subConnect).Between(0, d-1)
	return &List{Acts: []Action{{At: t0, Op: op}}, End: c.End}, t0
}

// Honest is a real player: movement input at the tick rate with jitter,
// abilities with human double-clicks, chat, rare purchases and a ping to
// measure the connection. It connects once, at a random time in the first
// ConnectSpread after its arrival, and plays until the end of its window.
// A NAT crowd is an Honest population with PerAddress > 1 (see NATCrowd).
type Honest struct {
	// ConnectSpread: the first connect is at a uniform time in
	// [0, ConnectSpread) after the client's arrival. Default 1s.
	// Negative: at the arrival.
	ConnectSpread time.Duration `yaml:"connect_spread"`
	// TickRate: movement inputs per second. Default 20. Negative: none.
	TickRate float64 `yaml:"tick_rate"`
	// TickJitter: each tick moves by a uniform amount in ±TickJitter
	// (capped below half a tick). Default 5ms. Negative: none.
	TickJitter time.Duration `yaml:"tick_jitter"`
	// MoveSize: movement payload bytes. Default 12.
	MoveSize int `yaml:"move_size"`
	// AbilityEvery: mean time between ability uses (exponential gaps).
	// Default 2s. Negative: none.
	AbilityEvery time.Duration `yaml:"ability_every"`
	// DoubleClick: probability that an ability use is a double click.
	// Default 0.2. Negative: never.
	DoubleClick float64 `yaml:"double_click"`
	// DoubleClickGap: mean time between a double click's two inputs
	// (uniform in [gap/2, 3·gap/2]). Default 120ms.
	DoubleClickGap time.Duration `yaml:"double_click_gap"`
	// AbilitySize: ability payload bytes. Default 4.
	AbilitySize int `yaml:"ability_size"`
	// ChatEvery: mean time between chat lines. Default 15s. Negative: none.
	ChatEvery time.Duration `yaml:"chat_every"`
	// ChatSize: mean chat payload bytes (uniform in [size/2, 3·size/2]).
	// Default 40.
	ChatSize int `yaml:"chat_size"`
	// PurchaseEvery: mean time between purchases. Default 2m. Negative:
	// none.
	PurchaseEvery time.Duration `yaml:"purchase_every"`
	// PurchaseSize: purchase payload bytes. Default 16.
	PurchaseSize int `yaml:"purchase_size"`
	// PingEvery: time between pings (±10% jitter). Default 1s. Negative:
	// none.
	PingEvery time.Duration `yaml:"ping_every"`
}

// Name returns "honest".
func (Honest) Name() string { return "honest" }

func (h Honest) check(c *checker) {
	c.dur("ConnectSpread", h.ConnectSpread, true)
	c.rate("TickRate", h.TickRate, true)
	c.dur("TickJitter", h.TickJitter, true)
	c.intIn("MoveSize", h.MoveSize, 0, maxSize)
	c.dur("AbilityEvery", h.AbilityEvery, true)
	c.fraction("DoubleClick", h.DoubleClick)
	c.dur("DoubleClickGap", h.DoubleClickGap, false)
	c.intIn("AbilitySize", h.AbilitySize, 0, maxSize)
	c.dur("ChatEvery", h.ChatEvery, true)
	c.intIn("ChatSize", h.ChatSize, 0, maxSize)
	c.dur("PurchaseEvery", h.PurchaseEvery, true)
	c.intIn("PurchaseSize", h.PurchaseSize, 0, maxSize)
	c.dur("PingEvery", h.PingEvery, true)
}

// Validate checks the parameters.
func (h Honest) Validate() error {
	c := checker{owner: h.Name()}
	h.check(&c)
	return c.err
}

// Stream returns the client's play.
func (h Honest) Stream(c *Client) Stream {
	subs, _ := h.streams(c)
	return newMerge(subs...)
}

// The rates of h's streams (ticks per second, else ns between sends),
// defaults filled in; 0 or less turns a stream off. streams and sends read
// them, so what is sent and what a policy is checked for cannot part.
func (h Honest) tickRate() float64    { return orFloat(h.TickRate, 20) }
func (h Honest) abilityEvery() int64  { return orDur(h.AbilityEvery, 2*time.Second) }
func (h Honest) chatEvery() int64     { return orDur(h.ChatEvery, 15*time.Second) }
func (h Honest) purchaseEvery() int64 { return orDur(h.PurchaseEvery, 2*time.Minute) }
func (h Honest) pingEvery() int64     { return orDur(h.PingEvery, time.Second) }

// streams returns the client's first connect and the honest play that
// follows it (Laggy and MassReconnect add theirs), and the connect's time.
func (h Honest) streams(c *Client) ([]Stream, int64) {
	first, t0 := firstConnect(c, h.ConnectSpread, OpConnect)
	out := []Stream{first}
	if tick := h.tickRate(); tick > 0 {
		tmpl := Action{Op: OpSend, Kind: KindMove, Size: orInt(h.MoveSize, 12)}
		// A negative TickJitter is none: newTicker clamps it to 0.
		out = append(out, newPhasedTicker(subRand(c, subMove), tmpl, t0, period(tick), orDur(h.TickJitter, 5*time.Millisecond), c.End))
	}
	if every := h.abilityEvery(); every > 0 {
		dbl := orFloat(h.DoubleClick, 0.2) // negative: Chance is never true
		gap := orDur(h.DoubleClickGap, 120*time.Millisecond)
		size := orInt(h.AbilitySize, 4)
		out = append(out, newEpisodesAfter(subRand(c, subAbility), t0, c.End, poissonGap(every),
			func(r *Rand, at int64, q []Action) []Action {
				a := Action{At: at, Op: OpSend, Kind: KindAbility, Size: size}
				q = append(q, a)
				if r.Chance(dbl) {
					a.At += r.Spread(gap)
					q = append(q, a)
				}
				return q
			}))
	}
	out = append(out, sizedEpisodes(c, subChat, t0, h.chatEvery(), KindChat, orInt(h.ChatSize, 40), true))
	out = append(out, sizedEpisodes(c, subPurchase, t0, h.purchaseEvery(), KindPurchase, orInt(h.PurchaseSize, 16), false))
	if every := h.pingEvery(); every > 0 {
		out = append(out, newPhasedTicker(subRand(c, subPing), Action{Op: OpSend, Kind: KindPing}, t0, every, every/10, c.End))
	}
	return out, t0
}

// sizedEpisodes sends one message of kind at Poisson times of the given
// mean; nil when every ≤ 0. With spread, sizes vary in [size/2, 3·size/2].
func sizedEpisodes(c *Client, sub int, t0, every int64, kind Kind, size int, spread bool) Stream {
	if every <= 0 {
		return nil
	}
	return newEpisodesAfter(subRand(c, sub), t0, c.End, poissonGap(every),
		func(r *Rand, at int64, q []Action) []Action {
			s := size
			if spread {
				s = int(r.Spread(int64(size)))
			}
			return append(q, Action{At: at, Op: OpSend, Kind: kind, Size: s})
		})
}

// NATCrowd is a population of honest players, perAddress of them behind
// each source address.
func NATCrowd(name string, clients, perAddress int, h Honest) Population {
	return Population{Name: name, Clients: clients, Behaviour: &h, PerAddress: perAddress}
}

// Ladder is a reconnect ladder: after losing its connection a client
// retries (OpRetry, which does nothing once it is back) with exponential
// backoff and jitter.
type Ladder struct {
	// Base: the delay before the first attempt. Default 250ms.
	Base time.Duration `yaml:"base"`
	// Factor: each delay is the previous one times Factor. Default 2.
	Factor float64 `yaml:"factor"`
	// Max: the cap on one delay before its jitter. Default 8s.
	Max time.Duration `yaml:"max"`
	// Jitter: each delay, once capped, is scaled by a uniform factor in
	// [1−Jitter, 1+Jitter], so that clients at the cap do not retry in
	// step: a delay is at most Max × (1+Jitter). Default 0.5. Negative:
	// none (every client retries at the same delays, at most Max).
	Jitter float64 `yaml:"jitter"`
	// Attempts: how many attempts one ladder makes. Default 8.
	Attempts int `yaml:"attempts"`
}

func (l Ladder) check(c *checker) {
	c.dur("Ladder.Base", l.Base, false)
	if l.Factor != 0 && !(l.Factor >= 1 && l.Factor <= 100) {
		c.fail("Ladder.Factor", l.Factor, "must be in [1, 100]")
	}
	c.dur("Ladder.Max", l.Max, false)
	c.fraction("Ladder.Jitter", l.Jitter)
	c.intIn("Ladder.Attempts", l.Attempts, 0, 1000)
}

// appendLadder appends a ladder's attempts, the first one Base (jittered)
// after at.
func (l Ladder) appendLadder(r *Rand, at int64, q []Action) []Action {
	base := float64(orDur(l.Base, 250*time.Millisecond))
	factor := orFloat(l.Factor, 2)
	cap := float64(orDur(l.Max, 8*time.Second))
	jitter := max(orFloat(l.Jitter, 0.5), 0) // negative: none
	d := base
	for i := 0; i < orInt(l.Attempts, 8); i++ {
		scale := 1 - jitter + 2*jitter*r.Float64()
		at += max(1, int64(min(d, cap)*scale))
		q = append(q, Action{At: at, Op: OpRetry})
		d *= factor
	}
	return q
}

// Laggy is an honest player on a bad network: every so often it freezes
// for a while (everything it sends is held) and then flushes the held input
// in one burst, and now and then its connection drops and it climbs a
// reconnect ladder.
type Laggy struct {
	Honest `yaml:",inline"`
	// FreezeEvery: mean gap (exponential) from the end of one freeze to
	// the start of the next. Default 10s. Negative: none.
	FreezeEvery time.Duration `yaml:"freeze_every"`
	// FreezeFor: mean freeze length T (uniform in [T/2, 3T/2]); the held
	// input is flushed at its end. Default 800ms.
	FreezeFor time.Duration `yaml:"freeze_for"`
	// DropEvery: mean gap (exponential) from the last rung of one drop's
	// reconnect ladder (every rung is scheduled; one after a successful
	// reconnect is skipped) to the next drop, so that drops never overlap:
	// with the default ladder (about 32s of rungs) drops come about a
	// minute apart, not 30s. Default 30s. Negative: none.
	DropEvery time.Duration `yaml:"drop_every"`
	// Ladder: how it reconnects after a drop.
	Ladder Ladder `yaml:"ladder"`
}

// Name returns "laggy".
func (Laggy) Name() string { return "laggy" }

// Validate checks the parameters.
func (l Laggy) Validate() error {
	c := checker{owner: l.Name()}
	l.Honest.check(&c)
	c.dur("FreezeEvery", l.FreezeEvery, true)
	c.dur("FreezeFor", l.FreezeFor, false)
	c.dur("DropEvery", l.DropEvery, true)
	l.Ladder.check(&c)
	return c.err
}

// Stream returns the client's play, freezes and drops.
func (l Laggy) Stream(c *Client) Stream {
	subs, t0 := l.streams(c)
	if every := orDur(l.FreezeEvery, 10*time.Second); every > 0 {
		T := orDur(l.FreezeFor, 800*time.Millisecond)
		subs = append(subs, newEpisodesAfter(subRand(c, subFreeze), t0, c.End, poissonGap(every),
			func(r *Rand, at int64, q []Action) []Action {
				return append(q, Action{At: at, Op: OpFreeze}, Action{At: at + r.Spread(T), Op: OpFlush})
			}))
	}
	if every := orDur(l.DropEvery, 30*time.Second); every > 0 {
		subs = append(subs, newEpisodesAfter(subRand(c, subDrop), t0, c.End, poissonGap(every),
			func(r *Rand, at int64, q []Action) []Action {
				return l.Ladder.appendLadder(r, at, append(q, Action{At: at, Op: OpDisconnect}))
			}))
	}
	return newMerge(subs...)
}

// MassReconnect is an honest player whose server restarts: at RestartAt
// (from the start of the population's window) every such client loses its
// connection (it closes it itself, in case the driver does not restart the
// server), notices within Detect, and climbs a reconnect ladder: the
// thundering herd after a restart.
type MassReconnect struct {
	Honest `yaml:",inline"`
	// RestartAt: when the restart happens, from the start of the
	// population's window (the run's start by default). Default: half-way
	// through the window.
	RestartAt time.Duration `yaml:"restart_at"`
	// Detect: each client notices the loss at a uniform time in
	// [0, Detect) after it. Default 1s.
	Detect time.Duration `yaml:"detect"`
	// Ladder: how it reconnects.
	Ladder Ladder `yaml:"ladder"`
}

// Name returns "mass-reconnect".
func (MassReconnect) Name() string { return "mass-reconnect" }

// Validate checks the parameters.
func (m MassReconnect) Validate() error {
	c := checker{owner: m.Name()}
	m.Honest.check(&c)
	c.dur("RestartAt", m.RestartAt, false)
	c.dur("Detect", m.Detect, false)
	m.Ladder.check(&c)
	return c.err
}

// Stream returns the client's play and its reconnect after the restart.
func (m MassReconnect) Stream(c *Client) Stream {
	subs, t0 := m.streams(c)
	restart := c.Start + orDur(m.RestartAt, time.Duration((c.End-c.Start)/2))
	if restart < t0 {
		// The client arrives after the restart: it has nothing to lose
		// or reconnect (its ladder would connect it before it arrived).
		return newMerge(subs...)
	}
	r := subRand(c, subRestart)
	detect := r.Between(0, max(orDur(m.Detect, time.Second)-1, 0))
	var q []Action
	q = append(q, Action{At: restart, Op: OpDisconnect})
	// The ladder's first attempt comes Base after the client notices.
	q = m.Ladder.appendLadder(r, restart+detect, q)
	return newMerge(append(subs, &List{Acts: q, End: c.End})...)
}
