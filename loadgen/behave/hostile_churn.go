package behave

import (
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// PacedReset sends exactly a channel's burst and then reconnects (same
// account), at a steady pace: never over the burst on one connection, so
// a per-connection limit never refuses it and it earns no strike, and
// each reconnect would buy a fresh burst if the limit belonged to the
// connection. Command-kind limits kept per account (see core.Gate) bound it
// to the channel's rate plus its burst.
type PacedReset struct {
	Persist `yaml:",inline"`
	// Kind: the channel it sends on. Default chat.
	Kind Kind `yaml:"kind"`
	// Burst: frames sent in one write after each connect. Default 5 (the
	// reference policy's chat burst).
	Burst int `yaml:"burst"`
	// Every: time between reconnects, ±10%. Default 125ms.
	Every time.Duration `yaml:"every"`
}

// Name returns "paced-reset".
func (PacedReset) Name() string { return "paced-reset" }

// Validate checks the parameters.
func (p PacedReset) Validate() error {
	return validateReconnectBursts(p.Name(), p.Persist, p.Kind, p.Burst, p.Every)
}

// Stream returns the reconnects and bursts.
func (p PacedReset) Stream(c *Client) Stream {
	every := orDur(p.Every, 125*time.Millisecond)
	return reconnectBursts(c, p.Persist, p.kind(), 16, orInt(p.Burst, 5),
		func(r *Rand) int64 { return every + r.Between(-every/10, every/10) })
}

// kind is the kind of the bursts, its default filled in.
func (p PacedReset) kind() Kind { return orKind(p.Kind, KindChat) }

// MalformedChurn logs in under a new identity again and again (accounts
// with the top bit set, ChurnAccount) and sends a few frames that do not
// decode under each: every identity earns the malformed strikes, so its
// account entry cannot be forgotten until they decay, and the churn tries
// to fill the server's account table with such entries. With Addresses > 1
// each client cycles its identities over that many source addresses of its
// own (none shared with any plan address group), so a population of n
// clients churns from n × Addresses addresses.
type MalformedChurn struct {
	Persist `yaml:",inline"`
	// Every: mean time between new identities (uniform in [T/2, 3T/2]).
	// Default 20ms.
	Every time.Duration `yaml:"every"`
	// Frames: malformed frames sent under each identity, in one write.
	// Default 4.
	Frames int `yaml:"frames"`
	// Addresses: how many source addresses each client cycles through.
	// Default 1: the client's own address group.
	Addresses int `yaml:"addresses"`
}

// WritesRaw returns true: its malformed frames are written with OpRaw.
func (MalformedChurn) WritesRaw() bool { return true }

// Name returns "malformed-churn".
func (MalformedChurn) Name() string { return "malformed-churn" }

// maxChurnAddresses bounds Addresses: the address groups it makes must
// stay inside the 24 bits a group has.
const maxChurnAddresses = 1 << 16

// churnAddrBase is the first address group MalformedChurn dials from when
// Addresses > 1: far above any plan's groups (one per client).
const churnAddrBase = 1 << 23

// Validate checks the parameters.
func (m MalformedChurn) Validate() error {
	c := checker{owner: m.Name()}
	m.Persist.check(&c)
	c.dur("Every", m.Every, false)
	c.intIn("Frames", m.Frames, 0, 1024)
	c.intIn("Addresses", m.Addresses, 0, maxChurnAddresses)
	return c.err
}

// ChurnAddr is the address group of the n-th identity of the client at
// index cycling over addresses groups (addresses > 1).
func ChurnAddr(index, addresses int, n uint64) uint32 {
	return uint32(churnAddrBase + (index*addresses+int(n%uint64(addresses)))%(1<<23))
}

// Stream returns the identities and their frames.
func (m MalformedChurn) Stream(c *Client) Stream {
	subs, t0 := m.Persist.streams(c, false)
	every := orDur(m.Every, 20*time.Millisecond)
	frames := orInt(m.Frames, 4)
	addrs := orInt(m.Addresses, 1)
	var n uint64
	var buf []byte
	subs = append(subs, newEpisodesAfter(subRand(c, subAttack), t0, c.End, spreadGap(every),
		func(r *Rand, at int64, q []Action) []Action {
			n++
			conn := Action{At: at, Op: OpConnect, Account: ChurnAccount(c.Index, n)}
			if addrs > 1 {
				conn.Addr = ChurnAddr(c.Index, addrs, n)
			}
			buf = buf[:0]
			for i := 0; i < frames; i++ {
				// Well-delimited frames that decode as nothing: an
				// unknown type, or an input too short for its channel.
				if i%2 == 0 {
					buf = append(wire.AppendHeader(buf, 2, wire.Type(8+r.Intn(248))), 0)
				} else {
					buf = wire.AppendHeader(buf, 1, wire.TypeInput)
				}
			}
			return append(q, conn, Action{At: at, Op: OpRaw, Data: buf})
		}))
	return newMerge(subs...)
}
