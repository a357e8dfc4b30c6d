package behave

import (
	"fmt"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// RawWriter is implemented by a behaviour that says whether its clients
// write raw bytes (OpRaw): bad-length, malformed and slowloris do. What
// such a client sends is counted in writes, and what the server decides
// on it in frames, so no drop rate of its population divides like units:
// a results file gives it none, and a scenario refuses a threshold on one.
type RawWriter interface {
	WritesRaw() bool
}

// WritesRaw reports whether b's clients write raw bytes (see RawWriter).
func WritesRaw(b Behaviour) bool {
	r, ok := b.(RawWriter)
	return ok && r.WritesRaw()
}

// Persist is how a hostile client comes back: it connects once at a random
// time in the first ConnectSpread after its arrival and, whenever it is
// down (refused, disconnected), retries every RetryEvery. Hostile
// behaviours embed it.
type Persist struct {
	// ConnectSpread: the first connect is at a uniform time in
	// [0, ConnectSpread) after the client's arrival. Default 1s.
	// Negative: at the arrival.
	ConnectSpread time.Duration `yaml:"connect_spread"`
	// RetryEvery: while down, reconnect this often (OpRetry). Default 1s.
	// Negative: never.
	RetryEvery time.Duration `yaml:"retry_every"`
}

func (p Persist) check(c *checker) {
	c.dur("ConnectSpread", p.ConnectSpread, true)
	c.dur("RetryEvery", p.RetryEvery, true)
}

// streams returns the connect (OpConnect, or OpDial when dial is set) and
// the retry ticker, and the time of the connect.
func (p Persist) streams(c *Client, dial bool) ([]Stream, int64) {
	op := OpConnect
	if dial {
		op = OpDial
	}
	first, t0 := firstConnect(c, p.ConnectSpread, op)
	out := []Stream{first}
	if every := orDur(p.RetryEvery, time.Second); every > 0 {
		out = append(out, newTicker(subRand(c, subRetry), Action{Op: OpRetry}, t0+every, every, every/10, c.End))
	}
	return out, t0
}

// TinyFlood packs many tiny frames (empty inputs) into every write: cheap
// in bytes, expensive in frames. The frame budget must catch it.
type TinyFlood struct {
	Persist `yaml:",inline"`
	// FramesPerWrite: frames packed into one write. Default 64.
	FramesPerWrite int `yaml:"frames_per_write"`
	// WritesPerSecond: writes per second (±10% jitter). Default 100.
	WritesPerSecond float64 `yaml:"writes_per_second"`
	// Kind: what the frames are. Default move (an empty Input, 6 bytes).
	Kind Kind `yaml:"kind"`
}

// Name returns "tiny-flood".
func (TinyFlood) Name() string { return "tiny-flood" }

// Validate checks the parameters.
func (f TinyFlood) Validate() error {
	c := checker{owner: f.Name()}
	f.Persist.check(&c)
	c.intIn("FramesPerWrite", f.FramesPerWrite, 0, maxCount)
	c.rate("WritesPerSecond", f.WritesPerSecond, false)
	if f.Kind != 0 {
		c.kind("Kind", f.Kind)
	}
	return c.err
}

// Stream returns the flood.
func (f TinyFlood) Stream(c *Client) Stream {
	subs, t0 := f.Persist.streams(c, false)
	p := period(orFloat(f.WritesPerSecond, 100))
	tmpl := Action{Op: OpSend, Kind: f.kind(), Count: orInt(f.FramesPerWrite, 64)}
	return newMerge(append(subs, newPhasedTicker(subRand(c, subAttack), tmpl, t0, p, p/10, c.End))...)
}

// kind is the kind the flood sends, its default filled in.
func (f TinyFlood) kind() Kind { return orKind(f.Kind, KindMove) }

// ByteFlood sends frames just under the maximum frame size: few frames,
// many bytes. The byte budget must catch it.
type ByteFlood struct {
	Persist `yaml:",inline"`
	// MaxFrame: the server's maximum frame size. Default
	// wire.DefaultMaxFrame.
	MaxFrame int `yaml:"max_frame"`
	// Under: how many bytes under MaxFrame each frame is. Default 1.
	Under int `yaml:"under"`
	// FramesPerWrite: frames per write. Default 4.
	FramesPerWrite int `yaml:"frames_per_write"`
	// WritesPerSecond: writes per second (±10% jitter). Default 50.
	WritesPerSecond float64 `yaml:"writes_per_second"`
	// Kind: move or ability (inputs), chat or purchase (requests). Default
	// move.
	Kind Kind `yaml:"kind"`
}

// Name returns "byte-flood".
func (ByteFlood) Name() string { return "byte-flood" }

func (f ByteFlood) kind() Kind { return orKind(f.Kind, KindMove) }

// payload returns the payload size that makes each frame MaxFrame−Under
// bytes.
func (f ByteFlood) payload() int {
	overhead := wire.InputOverhead
	if t, _, _ := f.kind().Wire(); t == wire.TypeRequest {
		overhead = wire.RequestOverhead
	}
	return orInt(f.MaxFrame, wire.DefaultMaxFrame) - orInt(f.Under, 1) - overhead
}

// Validate checks the parameters.
func (f ByteFlood) Validate() error {
	c := checker{owner: f.Name()}
	f.Persist.check(&c)
	if f.MaxFrame != 0 {
		c.intIn("MaxFrame", f.MaxFrame, wire.MinFrameLimit, wire.MaxFrameLimit)
	}
	c.intIn("Under", f.Under, 0, wire.MaxFrameLimit)
	c.intIn("FramesPerWrite", f.FramesPerWrite, 0, 1024)
	c.rate("WritesPerSecond", f.WritesPerSecond, false)
	if t, _, _ := f.kind().Wire(); t != wire.TypeInput && t != wire.TypeRequest {
		c.fail("Kind", f.Kind, "must be move, ability, chat or purchase")
	}
	if c.err == nil && f.payload() < 0 {
		c.fail("Under", f.Under, "leaves no room for the frame's header")
	}
	return c.err
}

// Stream returns the flood.
func (f ByteFlood) Stream(c *Client) Stream {
	subs, t0 := f.Persist.streams(c, false)
	p := period(orFloat(f.WritesPerSecond, 50))
	tmpl := Action{Op: OpSend, Kind: f.kind(), Size: f.payload(), Count: orInt(f.FramesPerWrite, 4)}
	return newMerge(append(subs, newPhasedTicker(subRand(c, subAttack), tmpl, t0, p, p/10, c.End))...)
}

// BadLength sends frames whose length prefix lies. Modes:
//   - "oversize": a header declaring more than MaxFrame (sometimes the
//     largest uint32), then a little filler: refused from the header;
//   - "short": a valid request whose length is cut short: the body is
//     malformed and its tail is read as the next header;
//   - "long": a header declaring more than is sent (up to MaxFrame): the
//     frame swallows what follows, or waits for bytes that never come;
//   - "mixed": one of the three at random per attack.
//
// Unless SameConn, each attack starts with a fresh connection (OpConnect),
// since the server should drop the one that lied.
type BadLength struct {
	Persist `yaml:",inline"`
	// Mode: "oversize" (default), "short", "long" or "mixed".
	Mode string `yaml:"mode"`
	// MaxFrame: the server's maximum frame size. Default
	// wire.DefaultMaxFrame.
	MaxFrame int `yaml:"max_frame"`
	// Every: mean time between attacks (uniform in [T/2, 3T/2]). Default
	// 200ms.
	Every time.Duration `yaml:"every"`
	// SameConn: keep attacking on the same connection.
	SameConn bool `yaml:"same_conn"`
}

// WritesRaw returns true: its lying frames are written with OpRaw.
func (BadLength) WritesRaw() bool { return true }

// Name returns "bad-length".
func (BadLength) Name() string { return "bad-length" }

// Validate checks the parameters.
func (b BadLength) Validate() error {
	c := checker{owner: b.Name()}
	b.Persist.check(&c)
	if b.Mode != "" {
		c.oneOf("Mode", b.Mode, "oversize", "short", "long", "mixed")
	}
	c.intIn("MaxFrame", b.MaxFrame, 0, wire.MaxFrameLimit)
	if b.MaxFrame != 0 && b.MaxFrame < wire.MinFrameLimit {
		c.fail("MaxFrame", b.MaxFrame, "must be at least wire.MinFrameLimit")
	}
	c.dur("Every", b.Every, false)
	return c.err
}

// Stream returns the attacks.
func (b BadLength) Stream(c *Client) Stream {
	subs, t0 := b.Persist.streams(c, false)
	maxFrame := orInt(b.MaxFrame, wire.DefaultMaxFrame)
	every := orDur(b.Every, 200*time.Millisecond)
	mode := b.Mode
	var buf []byte
	subs = append(subs, newEpisodesAfter(subRand(c, subAttack), t0, c.End, spreadGap(every),
		func(r *Rand, at int64, q []Action) []Action {
			if !b.SameConn {
				q = append(q, Action{At: at, Op: OpConnect})
			}
			m := mode
			if m == "" {
				m = "oversize"
			} else if m == "mixed" {
				m = [...]string{"oversize", "short", "long"}[r.Intn(3)]
			}
			buf = buf[:0]
			switch m {
			case "oversize":
				declared := uint32(maxFrame-wire.LenSize+1) + uint32(r.Intn(1<<20))
				if r.Chance(0.25) {
					declared = 1<<32 - 1
				}
				buf = wire.AppendHeader(buf, declared, wire.TypeRequest)
				buf = append(buf, make([]byte, 16)...)
			case "short":
				// The length stops inside the request's fixed fields (type,
				// kind, id), so the frame is malformed and the rest of the
				// body is read as the next header.
				body := 9 + r.Intn(32)
				buf = wire.AppendHeader(buf, uint32(1+r.Intn(9)), wire.TypeRequest)
				buf = append(buf, 2)
				buf = append(buf, make([]byte, body-1)...)
			case "long":
				sent := 9 + r.Intn(16)
				// At least two bytes more than are sent (one more would
				// declare exactly what is sent: a whole, honest frame).
				buf = wire.AppendHeader(buf, uint32(sent+2+r.Intn(maxFrame-wire.HeaderSize-sent)), wire.TypeRequest)
				buf = append(buf, 2)
				buf = append(buf, make([]byte, sent-1)...)
			}
			return append(q, Action{At: at, Op: OpRaw, Data: buf})
		}))
	return newMerge(subs...)
}

// Malformed sends well-delimited frames that do not decode (unknown types,
// bodies of the wrong size, hello lengths that do not add up, zero lengths,
// bad reply statuses) or plain random bytes, on a session. Modes:
// "malformed" (default), "garbage", "mixed".
type Malformed struct {
	Persist `yaml:",inline"`
	// Mode: "malformed" (default), "garbage" or "mixed".
	Mode string `yaml:"mode"`
	// Every: mean time between writes (uniform in [T/2, 3T/2]). Default
	// 50ms.
	Every time.Duration `yaml:"every"`
	// FramesPerWrite: malformed frames per write. Default 1.
	FramesPerWrite int `yaml:"frames_per_write"`
	// MaxGarbage: a garbage write is 1 to MaxGarbage random bytes.
	// Default 256.
	MaxGarbage int `yaml:"max_garbage"`
}

// WritesRaw returns true: its frames and random bytes are written with
// OpRaw.
func (Malformed) WritesRaw() bool { return true }

// Name returns "malformed".
func (Malformed) Name() string { return "malformed" }

// Validate checks the parameters.
func (m Malformed) Validate() error {
	c := checker{owner: m.Name()}
	m.Persist.check(&c)
	if m.Mode != "" {
		c.oneOf("Mode", m.Mode, "malformed", "garbage", "mixed")
	}
	c.dur("Every", m.Every, false)
	c.intIn("FramesPerWrite", m.FramesPerWrite, 0, 1024)
	c.intIn("MaxGarbage", m.MaxGarbage, 0, wire.MaxFrameLimit)
	return c.err
}

// appendMalformed appends one well-delimited frame that does not decode.
func appendMalformed(r *Rand, buf []byte) []byte {
	frame := func(t wire.Type, body ...byte) []byte {
		return append(wire.AppendHeader(buf, uint32(len(body)+1), t), body...)
	}
	switch r.Intn(7) {
	case 0:
		return frame(wire.Type(8 + r.Intn(248)))
	case 1:
		return frame(wire.TypeReply, make([]byte, r.Intn(18))...)
	case 2:
		return frame(wire.TypeHello, wire.Version, byte(10+r.Intn(200)), 'x')
	case 3:
		return append(buf, 0, 0, 0, 0)
	case 4:
		return frame(wire.TypeInput)
	case 5:
		return frame(wire.TypeReply, 0, 0, 0, 0, 0, 0, 0, 1, byte(3+r.Intn(250)), 0, 0, 0, 0, 0, 0, 0, 0, 0)
	default:
		return frame(wire.TypePing, make([]byte, r.Intn(8))...)
	}
}

// Stream returns the writes.
func (m Malformed) Stream(c *Client) Stream {
	subs, t0 := m.Persist.streams(c, false)
	every := orDur(m.Every, 50*time.Millisecond)
	frames := orInt(m.FramesPerWrite, 1)
	garbage := orInt(m.MaxGarbage, 256)
	var buf []byte
	subs = append(subs, newEpisodesAfter(subRand(c, subAttack), t0, c.End, spreadGap(every),
		func(r *Rand, at int64, q []Action) []Action {
			buf = buf[:0]
			g := m.Mode == "garbage" || (m.Mode == "mixed" && r.Chance(0.5))
			if g {
				for n := 1 + r.Intn(garbage); n > 0; n-- {
					buf = append(buf, byte(r.Uint32()))
				}
			} else {
				for i := 0; i < frames; i++ {
					buf = appendMalformed(r, buf)
				}
			}
			return append(q, Action{At: at, Op: OpRaw, Data: buf})
		}))
	return newMerge(subs...)
}

// Slowloris dribbles valid frames a few bytes at a time, holding a
// connection (and the server's partial-frame buffer) open for as long as it
// can. By default it never logs in: it dials and dribbles a Hello.
type Slowloris struct {
	Persist `yaml:",inline"`
	// BytesPerWrite: bytes per write. Default 1.
	BytesPerWrite int `yaml:"bytes_per_write"`
	// Every: time between writes (±10% jitter). Default 500ms.
	Every time.Duration `yaml:"every"`
	// Session: log in first (OpConnect) and dribble requests (each with
	// an id of its own, on the chat channel of DefaultChannels), instead of
	// dialling (OpDial) and dribbling a Hello.
	Session bool `yaml:"session"`
}

// WritesRaw returns true: it dribbles its frames with OpRaw.
func (Slowloris) WritesRaw() bool { return true }

// Name returns "slowloris".
func (Slowloris) Name() string { return "slowloris" }

// Validate checks the parameters.
func (s Slowloris) Validate() error {
	c := checker{owner: s.Name()}
	s.Persist.check(&c)
	c.intIn("BytesPerWrite", s.BytesPerWrite, 0, 1024)
	c.dur("Every", s.Every, false)
	return c.err
}

// Stream returns the dribble.
func (s Slowloris) Stream(c *Client) Stream {
	subs, t0 := s.Persist.streams(c, !s.Session)
	d := &dribble{requests: s.Session}
	if !s.Session {
		var tok [8]byte
		d.frame, _ = wire.AppendHello(nil, tok[:], []byte(c.Label))
	}
	every := orDur(s.Every, 500*time.Millisecond)
	r := subRand(c, subAttack)
	d.ticker = newTicker(r, Action{Op: OpRaw, Count: orInt(s.BytesPerWrite, 1)}, t0+every, every, every/10, c.End)
	return newMerge(append(subs, d)...)
}

// dribble yields, each tick, a frame to dribble (OpRaw with Count, the
// bytes per write): the worker writes Count bytes of the frame its
// connection is dribbling and starts the tick's frame when none is under
// way, so a frame is never continued on a new connection. With requests,
// every tick's frame is a valid request (on the chat channel of
// DefaultChannels) with an id of its own, so that whichever frames the
// worker starts, only their pace is hostile.
type dribble struct {
	*ticker
	frame    []byte
	requests bool
	made     uint64 // requests made
}

// dribblePayload is every dribbled request's payload.
var dribblePayload [32]byte

func (d *dribble) Next(a *Action) bool {
	if !d.ticker.Next(a) {
		return false
	}
	if d.requests {
		// The previous action's Data is done with: it lasts until this call.
		d.frame, _ = wire.AppendRequest(d.frame[:0], uint8(DefaultChannels[KindChat]), 1<<62+d.made, dribblePayload[:])
		d.made++
	}
	a.Data = d.frame
	return true
}

// Replay sends duplicate requests (the same id again while the first is
// in flight) and replays (an id that was already answered). Modes:
// "duplicate", "replay", "both" (default: each attack one or the other at
// random).
type Replay struct {
	Persist `yaml:",inline"`
	// Mode: "both" (default), "duplicate" or "replay".
	Mode string `yaml:"mode"`
	// Every: mean time between attacks (uniform in [T/2, 3T/2]). Default
	// 200ms.
	Every time.Duration `yaml:"every"`
	// Copies: copies sent after each original. Default 3.
	Copies int `yaml:"copies"`
	// ReplayDelay: how long after the original a replay is sent (it should
	// have been answered by then). Default 100ms.
	ReplayDelay time.Duration `yaml:"replay_delay"`
	// Kind: chat or purchase. Default purchase.
	Kind Kind `yaml:"kind"`
}

// Name returns "replay".
func (Replay) Name() string { return "replay" }

func (p Replay) kind() Kind { return orKind(p.Kind, KindPurchase) }

// Validate checks the parameters.
func (p Replay) Validate() error {
	c := checker{owner: p.Name()}
	p.Persist.check(&c)
	if p.Mode != "" {
		c.oneOf("Mode", p.Mode, "both", "duplicate", "replay")
	}
	c.dur("Every", p.Every, false)
	c.intIn("Copies", p.Copies, 0, maxCount)
	c.dur("ReplayDelay", p.ReplayDelay, false)
	if t, _, _ := p.kind().Wire(); t != wire.TypeRequest {
		c.fail("Kind", p.Kind, "must be chat or purchase")
	}
	return c.err
}

// Stream returns the attacks.
func (p Replay) Stream(c *Client) Stream {
	subs, t0 := p.Persist.streams(c, false)
	every := orDur(p.Every, 200*time.Millisecond)
	delay := orDur(p.ReplayDelay, 100*time.Millisecond)
	copies := orInt(p.Copies, 3)
	kind := p.kind()
	subs = append(subs, newEpisodesAfter(subRand(c, subAttack), t0, c.End, spreadGap(every),
		func(r *Rand, at int64, q []Action) []Action {
			q = append(q, Action{At: at, Op: OpSend, Kind: kind, Size: 16})
			dup := p.Mode == "duplicate" || (p.Mode != "replay" && r.Chance(0.5))
			if dup {
				return append(q, Action{At: at, Op: OpSend, Kind: kind, Size: 16, Count: copies, Reuse: ReuseLast})
			}
			return append(q, Action{At: at + delay, Op: OpSend, Kind: kind, Size: 16, Count: copies, Reuse: ReuseDone})
		}))
	return newMerge(subs...)
}

// HopTarget is one channel of a ChannelHop and the rate its limit allows.
type HopTarget struct {
	Kind Kind    `yaml:"kind"`
	Rate float64 `yaml:"rate"`
}

// DefaultHopTargets are the rates ChannelHop assumes when given none.
var DefaultHopTargets = []HopTarget{{KindMove, 20}, {KindAbility, 5}, {KindChat, 2}, {KindPurchase, 1}}

// ChannelHop sends on every channel at once, each just under its own rate:
// no channel bucket ever runs dry, so only the account and aggregate
// buckets see the total.
type ChannelHop struct {
	Persist `yaml:",inline"`
	// Targets: the channels and the rates their limits allow. Default
	// DefaultHopTargets.
	Targets []HopTarget `yaml:"targets"`
	// Margin: each channel is sent at Margin × its rate. Default 0.9.
	Margin float64 `yaml:"margin"`
	// Size: payload bytes. Default 8.
	Size int `yaml:"size"`
}

// Name returns "channel-hop".
func (ChannelHop) Name() string { return "channel-hop" }

// Validate checks the parameters.
func (h ChannelHop) Validate() error {
	c := checker{owner: h.Name()}
	h.Persist.check(&c)
	for i, t := range h.Targets {
		c.kind(fmt.Sprintf("Targets[%d].Kind", i), t.Kind)
		c.rate(fmt.Sprintf("Targets[%d].Rate", i), t.Rate, false)
		if t.Rate == 0 {
			c.fail(fmt.Sprintf("Targets[%d].Rate", i), t.Rate, "must be positive")
		}
	}
	if h.Margin != 0 && !(h.Margin > 0 && h.Margin <= 1) {
		c.fail("Margin", h.Margin, "must be in (0, 1]")
	}
	c.intIn("Size", h.Size, 0, maxSize)
	return c.err
}

// Stream returns the sends.
func (h ChannelHop) Stream(c *Client) Stream {
	subs, t0 := h.Persist.streams(c, false)
	targets := h.targets()
	margin := orFloat(h.Margin, 0.9)
	for i, t := range targets {
		// No jitter: jitter would let two sends come closer than the rate.
		tmpl := Action{Op: OpSend, Kind: t.Kind, Size: orInt(h.Size, 8)}
		subs = append(subs, newPhasedTicker(subRand(c, subExtra+i), tmpl, t0, period(t.Rate*margin), 0, c.End))
	}
	return newMerge(subs...)
}

// targets are the channels hopped over, DefaultHopTargets if none given.
func (h ChannelHop) targets() []HopTarget {
	if len(h.Targets) == 0 {
		return DefaultHopTargets
	}
	return h.Targets
}

// ResetReconnect bursts over a channel's limit, then reconnects (same
// account) and bursts again, hoping that a new connection gets a fresh
// bucket. Account state outlives connections, so it must not.
type ResetReconnect struct {
	Persist `yaml:",inline"`
	// Kind: the channel it bursts. Default ability.
	Kind Kind `yaml:"kind"`
	// Burst: frames sent in one write after each connect. Default 20.
	Burst int `yaml:"burst"`
	// Every: time between reconnects (uniform in [T/2, 3T/2]). Default
	// 500ms.
	Every time.Duration `yaml:"every"`
}

// Name returns "reset-reconnect".
func (ResetReconnect) Name() string { return "reset-reconnect" }

// Validate checks the parameters.
func (p ResetReconnect) Validate() error {
	return validateReconnectBursts(p.Name(), p.Persist, p.Kind, p.Burst, p.Every)
}

// Stream returns the reconnects and bursts.
func (p ResetReconnect) Stream(c *Client) Stream {
	every := orDur(p.Every, 500*time.Millisecond)
	return reconnectBursts(c, p.Persist, p.kind(), 4, orInt(p.Burst, 20), spreadGap(every))
}

// validateReconnectBursts checks the parameters ResetReconnect and
// PacedReset share, for the behaviour owner.
func validateReconnectBursts(owner string, persist Persist, kind Kind, burst int, every time.Duration) error {
	c := checker{owner: owner}
	persist.check(&c)
	if kind != 0 {
		c.kind("Kind", kind)
	}
	c.intIn("Burst", burst, 0, maxCount)
	c.dur("Every", every, false)
	return c.err
}

// reconnectBursts is the stream of ResetReconnect and PacedReset: the
// client's persistence, and from its first connect a burst of burst frames
// of kind (size bytes each) in one write, gap apart, each burst after the
// first on a new connection (the same account).
func reconnectBursts(c *Client, persist Persist, kind Kind, size, burst int, gap func(*Rand) int64) Stream {
	subs, t0 := persist.streams(c, false)
	// The first burst comes with the first connect.
	subs = append(subs, newEpisodes(subRand(c, subAttack), t0, c.End, gap,
		func(r *Rand, at int64, q []Action) []Action {
			if at > t0 {
				q = append(q, Action{At: at, Op: OpConnect})
			}
			return append(q, Action{At: at, Op: OpSend, Kind: kind, Size: size, Count: burst})
		}))
	return newMerge(subs...)
}

// kind is the kind of the bursts, its default filled in.
func (p ResetReconnect) kind() Kind { return orKind(p.Kind, KindAbility) }

// KeyChurn logs in under a new identity again and again (many accounts
// from one client), to fill the server's keyed tables and dodge per-account
// limits. Its accounts are distinct from every plan account (the top bit is
// set).
type KeyChurn struct {
	Persist `yaml:",inline"`
	// Every: mean time between new identities (uniform in [T/2, 3T/2]).
	// Default 50ms.
	Every time.Duration `yaml:"every"`
	// Messages: requests sent under each identity. Default 3.
	Messages int `yaml:"messages"`
	// Kind: what it sends. Default chat.
	Kind Kind `yaml:"kind"`
}

// Name returns "key-churn".
func (KeyChurn) Name() string { return "key-churn" }

// Validate checks the parameters.
func (k KeyChurn) Validate() error {
	c := checker{owner: k.Name()}
	k.Persist.check(&c)
	c.dur("Every", k.Every, false)
	c.intIn("Messages", k.Messages, 0, maxCount)
	if k.Kind != 0 {
		c.kind("Kind", k.Kind)
	}
	return c.err
}

// ChurnAccount is the n-th churned account of the client at index.
func ChurnAccount(index int, n uint64) uint64 {
	return 1<<63 | uint64(index)<<24 | n&(1<<24-1)
}

// Stream returns the identities.
func (k KeyChurn) Stream(c *Client) Stream {
	subs, t0 := k.Persist.streams(c, false)
	kind := k.kind()
	every := orDur(k.Every, 50*time.Millisecond)
	msgs := orInt(k.Messages, 3)
	var n uint64
	subs = append(subs, newEpisodesAfter(subRand(c, subAttack), t0, c.End, spreadGap(every),
		func(r *Rand, at int64, q []Action) []Action {
			n++
			return append(q, Action{At: at, Op: OpConnect, Account: ChurnAccount(c.Index, n)},
				Action{At: at, Op: OpSend, Kind: kind, Size: 16, Count: msgs})
		}))
	return newMerge(subs...)
}

// kind is the kind each identity sends, its default filled in.
func (k KeyChurn) kind() Kind { return orKind(k.Kind, KindChat) }

// HotKey hammers one kind of request at a steady rate. Put it in a
// population with PerAccount = Clients (see HotKeyCrowd) and one account
// is hammered from many connections at once.
type HotKey struct {
	Persist `yaml:",inline"`
	// Rate: requests per second per connection (±10% jitter). Default 50.
	Rate float64 `yaml:"rate"`
	// Kind: what it sends. Default purchase.
	Kind Kind `yaml:"kind"`
	// Size: payload bytes. Default 16.
	Size int `yaml:"size"`
}

// Name returns "hot-key".
func (HotKey) Name() string { return "hot-key" }

// Validate checks the parameters.
func (h HotKey) Validate() error {
	c := checker{owner: h.Name()}
	h.Persist.check(&c)
	c.rate("Rate", h.Rate, false)
	if h.Kind != 0 {
		c.kind("Kind", h.Kind)
	}
	c.intIn("Size", h.Size, 0, maxSize)
	return c.err
}

// Stream returns the requests.
func (h HotKey) Stream(c *Client) Stream {
	subs, t0 := h.Persist.streams(c, false)
	p := period(orFloat(h.Rate, 50))
	tmpl := Action{Op: OpSend, Kind: h.kind(), Size: orInt(h.Size, 16)}
	return newMerge(append(subs, newPhasedTicker(subRand(c, subAttack), tmpl, t0, p, p/10, c.End))...)
}

// kind is the kind the hot key is hit with, its default filled in.
func (h HotKey) kind() Kind { return orKind(h.Kind, KindPurchase) }

// HotKeyCrowd is a population of clients that all share one account and
// hammer it.
func HotKeyCrowd(name string, clients int, h HotKey) Population {
	return Population{Name: name, Clients: clients, Behaviour: &h, PerAccount: clients}
}
