package behave

import (
	"strconv"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// UDPCookieReplay obtains real cookies and replays them from another
// port. Each round it sends a padded handshake without a cookie, naming
// a fresh connection id, from its socket, which the server answers with
// a Cookie datagram; then Replays handshakes carrying that cookie (the
// same id and Hello), one every Every, from a second socket of the
// client's, on the same address and another port: an attacker that saw
// a cookie (its own, or a neighbour's behind the same NAT) and uses it
// from a source it does not prove it receives at. The server binds a
// cookie to the address and port it was sent to, so it must open no
// session for any replay, count each in UDPStats.BadCookies and answer it
// with at most a fresh cookie for the replaying port (25 bytes for a
// datagram of 64 or more).
//
// The stream is made before the run, so it cannot carry the cookie
// itself: its replays carry a cookie of zeros, which the loopback driver's
// replay socket (udpconn.DialReplay) replaces with the last cookie the
// client's first socket received (none received yet: the replay is not
// sent).
type UDPCookieReplay struct {
	Persist `yaml:",inline"`
	// Replays: replays of each cookie, after the handshake that obtains
	// it. Default 10.
	Replays int `yaml:"replays"`
	// Every: time between the handshake and its first replay, between
	// replays and before the next round (±10% jitter). Default 10ms.
	Every time.Duration `yaml:"every"`
}

func (UDPCookieReplay) udpDatagrams() {}

// udpCookieReplays marks a behaviour whose client is dialled a replay
// socket beside its own.
func (UDPCookieReplay) udpCookieReplays() {}

// UDPReplaysCookies reports whether b replays cookies from a second
// socket (UDPCookieReplay): the loopback driver dials its clients
// udpconn.DialReplay.
func UDPReplaysCookies(b Behaviour) bool {
	_, ok := b.(interface{ udpCookieReplays() })
	return ok
}

// WritesRaw returns true: it writes its handshakes with OpRaw.
func (UDPCookieReplay) WritesRaw() bool { return true }

// Name returns "udp-cookie-replay".
func (UDPCookieReplay) Name() string { return "udp-cookie-replay" }

// Validate checks the parameters.
func (p UDPCookieReplay) Validate() error {
	c := checker{owner: p.Name()}
	p.Persist.check(&c)
	c.intIn("Replays", p.Replays, 0, maxCount)
	c.dur("Every", p.Every, false)
	return c.err
}

// Stream returns the rounds: a handshake that obtains a cookie, then its
// replays.
func (p UDPCookieReplay) Stream(c *Client) Stream {
	subs, t0 := p.Persist.streams(c, true)
	every := udpEvery(p.Every)
	replays := orInt(p.Replays, 10)
	// The Hello carries the client's account, as an honest one's does: a
	// replay the server accepted would log in.
	token := strconv.AppendUint(nil, c.Account, 10)
	gap := func(r *Rand) int64 { return r.Between(every-every/10, every+every/10) }
	var zero [wire.CookieSize]byte
	return newMerge(append(subs, newEpisodesAfter(subRand(c, subAttack), t0, c.End, gap, func(r *Rand, at int64, q []Action) []Action {
		id := r.Uint64() | 1
		fetch, _ := wire.AppendHandshake(nil, id, nil, token, nil)
		replay, _ := wire.AppendHandshake(nil, id, zero[:], token, nil)
		q = append(q, Action{At: at, Op: OpRaw, Data: fetch})
		for range replays {
			at += gap(r)
			q = append(q, Action{At: at, Op: OpRaw, Data: replay})
		}
		return q
	}))...)
}
