package behave

import (
	"time"

	"github.com/sluicedev/sluice/loadgen/internal/wsraw"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// The hostile behaviours of the WebSocket transport. Each writes
// WebSocket frames of its own making (package wsraw), so it runs only
// over transport ws (RunSpec.Transport): the loopback driver dials it a
// plain socket and, unless the behaviour attacks the upgrade itself,
// upgrades it; every OpRaw then goes onto the socket as it is, and the
// server's binary messages are read back as the reference protocol's
// frames. None of them logs in (OpDial): an attacker need not.

// wsFramer is implemented by behaviours that write WebSocket frames
// themselves; upgrade says whether the driver upgrades the connection
// first.
type wsFramer interface {
	wsFrames() (upgrade bool)
}

// WSOnly returns the behaviour's name when b writes WebSocket frames of
// its own, and whether the driver upgrades its connections.
func WSOnly(b Behaviour) (raw, upgrade bool) {
	f, ok := b.(wsFramer)
	if !ok {
		return false, false
	}
	return true, f.wsFrames()
}

// WSSlowUpgrade dribbles the WebSocket upgrade request a few bytes at a
// time, holding a connection the server has not yet upgraded (and the
// HTTP server's buffers) as long as it can. The server's upgrade timeout
// must end it.
type WSSlowUpgrade struct {
	Persist `yaml:",inline"`
	// BytesPerWrite: bytes of the request per write. Default 1.
	BytesPerWrite int `yaml:"bytes_per_write"`
	// Every: time between writes (±10% jitter). Default 500ms.
	Every time.Duration `yaml:"every"`
}

func (WSSlowUpgrade) wsFrames() bool { return false }

// WritesRaw returns true: it writes the request with OpRaw.
func (WSSlowUpgrade) WritesRaw() bool { return true }

// Name returns "ws-slow-upgrade".
func (WSSlowUpgrade) Name() string { return "ws-slow-upgrade" }

// Validate checks the parameters.
func (s WSSlowUpgrade) Validate() error {
	c := checker{owner: s.Name()}
	s.Persist.check(&c)
	c.intIn("BytesPerWrite", s.BytesPerWrite, 0, 1024)
	c.dur("Every", s.Every, false)
	return c.err
}

// Stream returns the dribble.
func (s WSSlowUpgrade) Stream(c *Client) Stream {
	subs, t0 := s.Persist.streams(c, true)
	d := &dribble{frame: wsraw.Request("sluice")}
	every := orDur(s.Every, 500*time.Millisecond)
	d.ticker = newTicker(subRand(c, subAttack), Action{Op: OpRaw, Count: orInt(s.BytesPerWrite, 1)}, t0+every, every, every/10, c.End)
	return newMerge(append(subs, d)...)
}

// WSFragmentFlood sends whole messages, each a well-formed input frame
// cut into fragments of FragmentSize bytes: every payload byte costs a
// frame header and a mask (7 bytes at FragmentSize 1), and the server's
// parser a frame. The byte budget, which counts what is on the socket,
// must catch it.
type WSFragmentFlood struct {
	Persist `yaml:",inline"`
	// FragmentSize: payload bytes per fragment. Default 1.
	FragmentSize int `yaml:"fragment_size"`
	// MessagesPerWrite: messages per write. Default 8.
	MessagesPerWrite int `yaml:"messages_per_write"`
	// WritesPerSecond: writes per second (±10% jitter). Default 50.
	WritesPerSecond float64 `yaml:"writes_per_second"`
}

func (WSFragmentFlood) wsFrames() bool { return true }

// WritesRaw returns true: it writes its fragments with OpRaw.
func (WSFragmentFlood) WritesRaw() bool { return true }

// Name returns "ws-fragment-flood".
func (WSFragmentFlood) Name() string { return "ws-fragment-flood" }

// Validate checks the parameters.
func (f WSFragmentFlood) Validate() error {
	c := checker{owner: f.Name()}
	f.Persist.check(&c)
	c.intIn("FragmentSize", f.FragmentSize, 0, 1024)
	c.intIn("MessagesPerWrite", f.MessagesPerWrite, 0, 1024)
	c.rate("WritesPerSecond", f.WritesPerSecond, false)
	return c.err
}

// Stream returns the flood.
func (f WSFragmentFlood) Stream(c *Client) Stream {
	subs, t0 := f.Persist.streams(c, true)
	size := orInt(f.FragmentSize, 1)
	msg, _ := wire.AppendInput(nil, uint8(DefaultChannels[KindMove]), make([]byte, 12))
	var data []byte
	for range orInt(f.MessagesPerWrite, 8) {
		for off := 0; off < len(msg); off += size {
			op := byte(wsraw.OpContinuation)
			if off == 0 {
				op = wsraw.OpBinary
			}
			data = wsraw.AppendFrame(data, off+size >= len(msg), op, msg[off:min(off+size, len(msg))])
		}
	}
	every := period(orFloat(f.WritesPerSecond, 50))
	subs = append(subs, newTicker(subRand(c, subAttack), Action{Op: OpRaw, Data: data}, t0+every, every, every/10, c.End))
	return newMerge(subs...)
}

// WSPingFlood sends WebSocket pings, many per write. Each is charged as
// a ping of the reference protocol (the policy's ping channel), so only
// the pings that budget allows are answered; the rest are dropped and
// strike.
type WSPingFlood struct {
	Persist `yaml:",inline"`
	// PingsPerWrite: pings per write. Default 16.
	PingsPerWrite int `yaml:"pings_per_write"`
	// PayloadSize: each ping's payload bytes (at most 125, the most a
	// control frame carries). Default 8.
	PayloadSize int `yaml:"payload_size"`
	// WritesPerSecond: writes per second (±10% jitter). Default 100.
	WritesPerSecond float64 `yaml:"writes_per_second"`
}

func (WSPingFlood) wsFrames() bool { return true }

// WritesRaw returns true: it writes its pings with OpRaw.
func (WSPingFlood) WritesRaw() bool { return true }

// Name returns "ws-ping-flood".
func (WSPingFlood) Name() string { return "ws-ping-flood" }

// Validate checks the parameters.
func (p WSPingFlood) Validate() error {
	c := checker{owner: p.Name()}
	p.Persist.check(&c)
	c.intIn("PingsPerWrite", p.PingsPerWrite, 0, maxCount)
	c.intIn("PayloadSize", p.PayloadSize, 0, 125)
	c.rate("WritesPerSecond", p.WritesPerSecond, false)
	return c.err
}

// Stream returns the flood.
func (p WSPingFlood) Stream(c *Client) Stream {
	subs, t0 := p.Persist.streams(c, true)
	payload := make([]byte, orInt(p.PayloadSize, 8))
	var data []byte
	for range orInt(p.PingsPerWrite, 16) {
		data = wsraw.AppendFrame(data, true, wsraw.OpPing, payload)
	}
	every := period(orFloat(p.WritesPerSecond, 100))
	subs = append(subs, newTicker(subRand(c, subAttack), Action{Op: OpRaw, Data: data}, t0+every, every, every/10, c.End))
	return newMerge(subs...)
}

// WSOversizeHeader opens a connection, upgrades it and sends a frame
// header declaring far more than any server accepts (and a few bytes of
// its payload): the server must refuse it from the header alone (reason
// Oversize), before it reads or buffers the payload. Each attack is on a
// fresh connection.
type WSOversizeHeader struct {
	Persist `yaml:",inline"`
	// Declared: the payload size the header declares, in bytes. Default
	// 2⁶².
	Declared uint64 `yaml:"declared"`
	// Every: mean time between attacks (uniform in [T/2, 3T/2]). Default
	// 200ms.
	Every time.Duration `yaml:"every"`
}

func (WSOversizeHeader) wsFrames() bool { return true }

// WritesRaw returns true: it writes its header with OpRaw.
func (WSOversizeHeader) WritesRaw() bool { return true }

// Name returns "ws-oversize-header".
func (WSOversizeHeader) Name() string { return "ws-oversize-header" }

// Validate checks the parameters.
func (o WSOversizeHeader) Validate() error {
	c := checker{owner: o.Name()}
	o.Persist.check(&c)
	if o.Declared > 1<<63-1 {
		c.fail("Declared", o.Declared, "must be below 2^63 (RFC 6455 §5.2)")
	}
	c.dur("Every", o.Every, false)
	return c.err
}

// Stream returns the attacks.
func (o WSOversizeHeader) Stream(c *Client) Stream {
	subs, t0 := o.Persist.streams(c, true)
	declared := o.Declared
	if declared == 0 {
		declared = 1 << 62
	}
	data := append(wsraw.AppendHeader(nil, true, wsraw.OpBinary, declared), make([]byte, 64)...)
	subs = append(subs, newEpisodesAfter(subRand(c, subAttack), t0, c.End, spreadGap(orDur(o.Every, 200*time.Millisecond)),
		func(r *Rand, at int64, q []Action) []Action {
			return append(q, Action{At: at, Op: OpDial}, Action{At: at, Op: OpRaw, Data: data})
		}))
	return newMerge(subs...)
}
