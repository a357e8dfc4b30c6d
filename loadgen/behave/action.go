package behave

import (
	"errors"
	"fmt"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// Kind labels what a client sends, for recording (population × kind) and
// for the wire: each sendable kind is sent as one frame type, on the
// policy channel of its name (see Wire, Channels and the table in the
// package doc). Kinds have stable names.
type Kind uint8

// The kinds. New ones are only ever appended.
const (
	KindHello    Kind = iota // the session handshake: dial, then Hello, answered by the Reply with id 0
	KindMove                 // Input on the move channel (0 in DefaultChannels): movement, at the tick rate
	KindAbility              // Input on the ability channel (1): ability use
	KindChat                 // Request on the chat channel (2): a chat line
	KindPurchase             // Request on the purchase channel (3): a purchase
	KindPing                 // Ping, answered by a Pong
	// KindRaw is bytes written as-is (hostile clients), which the
	// client counts per write (see OpRaw), and the server's decisions on
	// the frames that no other kind describes (a frame that does not
	// decode, an oversize one, one on a channel no kind uses), counted
	// per frame.
	KindRaw
	KindSession // the server ending a session: a Disconnect frame, or a close
	NumKinds    // the number of kinds, for tables indexed by Kind
)

var kindNames = [NumKinds]string{"hello", "move", "ability", "chat", "purchase", "ping", "raw", "session"}

// String returns the kind's stable name.
func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind returns the kind with the given stable name.
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("loadgen: unknown kind %q", s)
}

// MarshalText encodes the stable name.
func (k Kind) MarshalText() ([]byte, error) {
	if k >= NumKinds {
		return nil, fmt.Errorf("loadgen: unknown kind %d", uint8(k))
	}
	return []byte(kindNames[k]), nil
}

// UnmarshalText decodes a stable name.
func (k *Kind) UnmarshalText(b []byte) error {
	p, err := ParseKind(string(b))
	if err == nil {
		*k = p
	}
	return err
}

// Wire returns the frame type a kind is sent as and, for inputs and
// requests, its channel in DefaultPolicy (the Input's channel byte, the
// Request's kind byte; see DefaultChannels). Only move, ability, chat,
// purchase and ping are sendable with OpSend; ok is false for the others.
// A run against another policy sends each kind on the channel of the same
// name (see ChannelsOf).
func (k Kind) Wire() (t wire.Type, code uint8, ok bool) {
	switch k {
	case KindMove, KindAbility:
		return wire.TypeInput, uint8(DefaultChannels[k]), true
	case KindChat, KindPurchase:
		return wire.TypeRequest, uint8(DefaultChannels[k]), true
	case KindPing:
		return wire.TypePing, 0, true
	}
	return 0, 0, false
}

// Sendable reports whether OpSend can send k.
func (k Kind) Sendable() bool {
	_, _, ok := k.Wire()
	return ok
}

// Channels maps each kind sent as an Input or a Request to its channel: the
// index, in the server's Policy.Channels, that the frame's channel (Input)
// or kind (Request) byte carries. -1 means the policy has no channel for
// the kind: a client does not send it, and counts it as NotSent. Pings have
// no channel byte (the server checks them on its ping channel); their entry
// is -1, as are those of the kinds that are not sendable.
type Channels [NumKinds]int

// DefaultChannels is the layout of DefaultPolicy: move 0, ability 1, chat
// 2, purchase 3.
var DefaultChannels = Channels{-1, 0, 1, 2, 3, -1, -1, -1}

// ErrChannel is wrapped by ChannelsOf's errors.
var ErrChannel = errors.New("loadgen: policy channel does not fit the harness")

// ChannelsOf maps the kinds to the channels of p by name: "move",
// "ability", "chat" and "purchase". A missing channel maps to -1. A
// channel of the wrong class (a request class for move or ability, another
// class for chat or purchase) or direction, or at an index a byte cannot
// carry, is an error wrapping ErrChannel: the server would count every such
// frame as malformed, which is a mistake in the run's set-up, not a finding.
func ChannelsOf(p *core.Policy) (Channels, error) {
	out := Channels{-1, -1, -1, -1, -1, -1, -1, -1}
	for _, k := range []Kind{KindMove, KindAbility, KindChat, KindPurchase} {
		i := p.ChannelIndex(k.String())
		if i < 0 {
			continue
		}
		c := &p.Channels[i]
		wantReq := k == KindChat || k == KindPurchase
		switch {
		case i > 255:
			return out, fmt.Errorf("%w: channel %q is at index %d, past what one byte carries", ErrChannel, c.Name, i)
		case c.Direction != core.ClientToServer:
			return out, fmt.Errorf("%w: channel %q is server-to-client; the harness sends %v on it", ErrChannel, c.Name, k)
		case wantReq && c.Class != core.ClassRequest:
			return out, fmt.Errorf("%w: channel %q has class %v; the harness sends %v as requests", ErrChannel, c.Name, c.Class, k)
		case !wantReq && c.Class == core.ClassRequest:
			return out, fmt.Errorf("%w: channel %q has class request; the harness sends %v as inputs", ErrChannel, c.Name, k)
		}
		out[k] = i
	}
	return out, nil
}

// DefaultPolicy is the policy a run uses when a scenario gives none: one
// channel per sendable kind, named after it, in the order of
// DefaultChannels (move and ability inputs, chat and purchase requests,
// then ping, an input channel the server checks pings on), and core's
// defaults everywhere else (30 messages per second per channel, the
// default transport, account, address and match budgets, strikes and
// tables).
func DefaultPolicy() core.Policy {
	return core.Policy{Channels: []core.Channel{
		{Name: "move", Class: core.ClassInput},
		{Name: "ability", Class: core.ClassInput},
		{Name: "chat", Class: core.ClassRequest},
		{Name: "purchase", Class: core.ClassRequest},
		{Name: "ping", Class: core.ClassInput},
	}}
}

// Op is what an action does.
type Op uint8

// The operations.
const (
	// OpConnect opens a new connection (closing the client's current one,
	// if any) and sends Hello with the client's account (or Action.Account)
	// and population label. Until the hello's reply accepts the session,
	// the client holds what it sends, as a real client waits for login
	// (but OpFrames).
	OpConnect Op = iota + 1
	// OpRetry is one attempt of a reconnect ladder: an OpConnect made only
	// if the client is down (never connected, refused, closed); skipped
	// otherwise.
	OpRetry
	// OpDial opens a new connection and sends nothing: what follows is
	// pre-authentication traffic.
	OpDial
	// OpDisconnect closes the connection from the client's side.
	OpDisconnect
	// OpSend sends Count frames of Kind in one write (requests get fresh
	// ids unless Reuse says otherwise).
	OpSend
	// OpRaw writes Data as-is, recorded under KindRaw as one write (its
	// outcome, its bytes): the client does not know how the server will
	// delimit the bytes into frames (random bytes, a lying length, a frame
	// dribbled over many writes), so it counts writes, while the server's
	// decisions on what it reads from them count frames. No rate divides
	// the one by the other (see WritesRaw).
	OpRaw
	// OpFreeze holds everything the client sends from now on, as a stalled
	// network would; OpFlush ends the freeze and writes what was held in
	// one write.
	OpFreeze
	// OpFlush: see OpFreeze.
	OpFlush
	// OpHalfClose shuts down the sending side of the connection
	// (shutdown(SHUT_WR)) and keeps reading: the replies to what was sent
	// still count, and the server's close that follows ends the connection
	// without counting as a disconnect. Nothing can be sent on it after.
	OpHalfClose
	// OpFrames writes Data, whole frames of the reference protocol (a
	// traced read's, rebuilt), in one write, counting each frame under
	// its kind (by its type and channel byte, raw when neither names one)
	// as sent, with no reply awaited: what a replayed session sends is
	// counted as messages, as in the sim, not as raw writes. It is
	// written at once while the Hello awaits its answer, not held: the
	// recorded server read the frames at their time, whatever its client
	// knew then.
	OpFrames
	numOps
)

var opNames = [numOps]string{"", "connect", "retry", "dial", "disconnect", "send", "raw", "freeze", "flush", "half-close", "frames"}

// String returns the operation's name.
func (o Op) String() string {
	if o > 0 && o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Reuse says which request id an OpSend of a request kind carries.
type Reuse uint8

// The id choices.
const (
	ReuseNone Reuse = iota // a fresh id for every frame
	ReuseLast              // the client's latest request id: a duplicate, likely still in flight
	ReuseDone              // the client's latest answered request id: a replay
	// ReuseSparse: a fresh id, but not the next one counting up: the
	// client's ids are spread over all 64 bits (a fixed scramble of its
	// count, never 0 and never repeating on a connection), so their low
	// bits collide as often as random ids'.
	ReuseSparse
)

// Action is one thing a client intends to do at a time. Behaviours make
// them; a worker carries them out through a Driver. The zero value is not a
// valid action (it has no Op).
type Action struct {
	// At is the intended time, in ns since the run's start. An action
	// carried out late keeps its At: latency is measured from it.
	At int64
	Op Op
	// OpSend: what to send, the request-id choice, the payload bytes per
	// frame (inputs and requests) and the frames packed into the one
	// write (≤ 0 means 1). OpRaw: Count > 0 dribbles Data (see Data).
	// (The one-byte fields come together, so that an Action, which
	// streams and the worker copy for every action, fills one 64-byte
	// cache line.)
	Kind  Kind
	Reuse Reuse
	// OpConnect, OpRetry, OpDial: the game server of a fleet run to dial
	// (see ServerAssigned, ServerNext, ServerIndex); ignored with one server.
	Server uint8
	// OpConnect, OpDial: the source-address group to dial from (0 means
	// the client's own, Client.Addr).
	Addr  uint32
	Size  int
	Count int
	// OpConnect, OpRetry: the account the hello carries (0 means the
	// client's own).
	Account uint64
	// OpRaw: the bytes to write. They stay valid until the stream's next
	// Next call, no longer. With Count > 0, Data is instead a whole frame
	// to dribble: the write is the next Count bytes of the frame the
	// connection is dribbling, and Data is that frame only when a new one
	// starts (a frame is dribbled to its end on one connection, and every
	// new connection starts one afresh, as a real slow client does).
	Data []byte
}

// String formats an action for test failures and traces.
func (a Action) String() string {
	s := fmt.Sprintf("%d %v", a.At, a.Op)
	switch a.Op {
	case OpSend:
		s += fmt.Sprintf(" %v size=%d count=%d reuse=%d", a.Kind, a.Size, a.Count, a.Reuse)
	case OpRaw:
		if a.Count > 0 {
			s += fmt.Sprintf(" dribble=%d", a.Count)
		}
		s += fmt.Sprintf(" %x", a.Data)
	case OpConnect, OpRetry:
		if a.Account != 0 {
			s += fmt.Sprintf(" account=%d", a.Account)
		}
	}
	return s
}
