package behave

import (
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// The hostile behaviours of the UDP transport. Each writes datagrams of
// its own making, one per OpRaw, so it runs only over transport udp
// (RunSpec.Transport) and on the loopback driver: the driver dials it a
// plain UDP socket (udpconn.DialRaw), not a session, and none of them
// logs in. What the server answers them with (cookies, nothing) is read
// and dropped, but for the last cookie, which udp-cookie-replay
// (hostile_udp_replay.go) replays. A datagram flood on a session is
// tiny-flood (or any flooding behaviour) over transport udp: each of its
// frames is a datagram, each charged at least the minimum charge.

// udpDatagrammer is implemented by behaviours that write UDP datagrams
// themselves.
type udpDatagrammer interface {
	udpDatagrams()
}

// UDPOnly reports whether b writes UDP datagrams of its own.
func UDPOnly(b Behaviour) bool {
	_, ok := b.(udpDatagrammer)
	return ok
}

// udpEvery is the raw behaviours' datagram pace: Every's default 10ms.
func udpEvery(every time.Duration) int64 { return orDur(every, 10*time.Millisecond) }

// UDPHandshakeFlood sends handshakes without a cookie, padded as an
// honest client's are, each naming a fresh connection id: the server
// must keep no state for them, answer each with a cookie no larger than
// the handshake, and send at most UDP.HandshakeRate cookies a second.
type UDPHandshakeFlood struct {
	Persist `yaml:",inline"`
	// Every: time between handshakes (±10% jitter). Default 10ms.
	Every time.Duration `yaml:"every"`
}

func (UDPHandshakeFlood) udpDatagrams() {}

// WritesRaw returns true: it writes its handshakes with OpRaw.
func (UDPHandshakeFlood) WritesRaw() bool { return true }

// Name returns "udp-handshake-flood".
func (UDPHandshakeFlood) Name() string { return "udp-handshake-flood" }

// Validate checks the parameters.
func (f UDPHandshakeFlood) Validate() error {
	c := checker{owner: f.Name()}
	f.Persist.check(&c)
	c.dur("Every", f.Every, false)
	return c.err
}

// Stream returns the flood.
func (f UDPHandshakeFlood) Stream(c *Client) Stream {
	subs, t0 := f.Persist.streams(c, true)
	return newMerge(append(subs, udpDatagramStream(c, t0, udpEvery(f.Every), func(r *Rand) []byte {
		hs, _ := wire.AppendHandshake(nil, r.Uint64()|1, nil, []byte("flood"), nil)
		return hs
	}))...)
}

// UDPAmplify sends the smallest handshakes it can (a header and a Hello,
// unpadded: 19 bytes), hoping for an answer larger than the request, as a
// reflection attack spoofing a victim's address would. The server must
// answer none of them.
type UDPAmplify struct {
	Persist `yaml:",inline"`
	// Every: time between handshakes (±10% jitter). Default 10ms.
	Every time.Duration `yaml:"every"`
}

func (UDPAmplify) udpDatagrams() {}

// WritesRaw returns true: it writes its handshakes with OpRaw.
func (UDPAmplify) WritesRaw() bool { return true }

// Name returns "udp-amplify".
func (UDPAmplify) Name() string { return "udp-amplify" }

// Validate checks the parameters.
func (a UDPAmplify) Validate() error {
	c := checker{owner: a.Name()}
	a.Persist.check(&c)
	c.dur("Every", a.Every, false)
	return c.err
}

// Stream returns the attempts.
func (a UDPAmplify) Stream(c *Client) Stream {
	subs, t0 := a.Persist.streams(c, true)
	return newMerge(append(subs, udpDatagramStream(c, t0, udpEvery(a.Every), func(r *Rand) []byte {
		b := append(wire.AppendDatagramHeader(nil, wire.DatagramHandshake, r.Uint64()|1), 0)
		b, _ = wire.AppendHello(b, []byte{'a'}, nil)
		return b
	}))...)
}

// UDPGarbage sends datagrams of random bytes, of random sizes up to
// MaxSize: no datagram of the protocol, answered with nothing.
type UDPGarbage struct {
	Persist `yaml:",inline"`
	// MaxSize: the largest datagram, in bytes. Default 200.
	MaxSize int `yaml:"max_size"`
	// Every: time between datagrams (±10% jitter). Default 10ms.
	Every time.Duration `yaml:"every"`
}

func (UDPGarbage) udpDatagrams() {}

// WritesRaw returns true: it writes its datagrams with OpRaw.
func (UDPGarbage) WritesRaw() bool { return true }

// Name returns "udp-garbage".
func (UDPGarbage) Name() string { return "udp-garbage" }

// Validate checks the parameters.
func (g UDPGarbage) Validate() error {
	c := checker{owner: g.Name()}
	g.Persist.check(&c)
	c.intIn("MaxSize", g.MaxSize, 0, 1400)
	c.dur("Every", g.Every, false)
	return c.err
}

// Stream returns the garbage.
func (g UDPGarbage) Stream(c *Client) Stream {
	subs, t0 := g.Persist.streams(c, true)
	most := orInt(g.MaxSize, 200)
	return newMerge(append(subs, udpDatagramStream(c, t0, udpEvery(g.Every), func(r *Rand) []byte {
		b := make([]byte, 1+r.Intn(most))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}))...)
}

// UDPIDGuess sends Data datagrams carrying a request, each naming a
// random connection id, hoping to land in another client's session: the
// server keys sessions by id and source address together, so none does,
// and it answers none.
type UDPIDGuess struct {
	Persist `yaml:",inline"`
	// Every: time between guesses (±10% jitter). Default 10ms.
	Every time.Duration `yaml:"every"`
}

func (UDPIDGuess) udpDatagrams() {}

// WritesRaw returns true: it writes its datagrams with OpRaw.
func (UDPIDGuess) WritesRaw() bool { return true }

// Name returns "udp-id-guess".
func (UDPIDGuess) Name() string { return "udp-id-guess" }

// Validate checks the parameters.
func (g UDPIDGuess) Validate() error {
	c := checker{owner: g.Name()}
	g.Persist.check(&c)
	c.dur("Every", g.Every, false)
	return c.err
}

// Stream returns the guesses.
func (g UDPIDGuess) Stream(c *Client) Stream {
	subs, t0 := g.Persist.streams(c, true)
	return newMerge(append(subs, udpDatagramStream(c, t0, udpEvery(g.Every), func(r *Rand) []byte {
		b := wire.AppendDatagramHeader(nil, wire.DatagramData, r.Uint64()|1)
		b, _ = wire.AppendRequest(b, uint8(DefaultChannels[KindPurchase]), 1, []byte("buy"))
		return b
	}))...)
}

// udpDatagramStream writes one datagram made by mk every period (±10%
// jitter) from t0 + period until the client's end, on the connection the
// behaviour dialled.
func udpDatagramStream(c *Client, t0, every int64, mk func(*Rand) []byte) Stream {
	return newEpisodesAfter(subRand(c, subAttack), t0, c.End, func(r *Rand) int64 { return r.Between(every-every/10, every+every/10) },
		func(r *Rand, at int64, q []Action) []Action {
			return append(q, Action{At: at, Op: OpRaw, Data: mk(r)})
		})
}
