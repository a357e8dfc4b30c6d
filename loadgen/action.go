package loadgen

import (
	"fmt"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// Kind labels what a client sends, for recording (population × kind) and
// for the wire: each sendable kind has a fixed place in the reference
// protocol (see the table in the package doc). Kinds have stable names.
type Kind uint8

// The kinds. New ones are only ever appended.
const (
	KindHello    Kind = iota // the session handshake: dial, then Hello, answered by the Reply with id 0
	KindMove                 // Input on channel 1: movement, at the tick rate
	KindAbility              // Input on channel 2: ability use
	KindChat                 // Request of kind 1: a chat line
	KindPurchase             // Request of kind 2: a purchase
	KindPing                 // Ping, answered by a Pong
	KindRaw                  // bytes written as-is (hostile clients)
	KindSession              // the server ending a session: a Disconnect frame, or a close
	NumKinds                 // the number of kinds, for tables indexed by Kind
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

// Wire returns the frame type a kind is sent as and its channel (Input) or
// command kind (Request). Only move, ability, chat, purchase and ping are
// sendable with OpSend; ok is false for the others.
func (k Kind) Wire() (t wire.Type, code uint8, ok bool) {
	switch k {
	case KindMove:
		return wire.TypeInput, 1, true
	case KindAbility:
		return wire.TypeInput, 2, true
	case KindChat:
		return wire.TypeRequest, 1, true
	case KindPurchase:
		return wire.TypeRequest, 2, true
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

// KindOfInput returns the kind sent as an Input on channel, and
// KindOfRequest the kind sent as a Request of the given command kind; ok is
// false for codes no kind uses. A server or sim driver uses them to label
// what it decides.
func KindOfInput(channel uint8) (Kind, bool) {
	switch channel {
	case 1:
		return KindMove, true
	case 2:
		return KindAbility, true
	}
	return 0, false
}

// KindOfRequest: see KindOfInput.
func KindOfRequest(kind uint8) (Kind, bool) {
	switch kind {
	case 1:
		return KindChat, true
	case 2:
		return KindPurchase, true
	}
	return 0, false
}

// Op is what an action does.
type Op uint8

// The operations.
const (
	// OpConnect opens a new connection (closing the client's current one,
	// if any) and sends Hello with the client's account (or Action.Account)
	// and population label. Until the hello's reply accepts the session,
	// the client holds what it sends, as a real client waits for login.
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
	// OpRaw writes Data as-is, recorded under KindRaw.
	OpRaw
	// OpFreeze holds everything the client sends from now on, as a stalled
	// network would; OpFlush ends the freeze and writes what was held in
	// one write.
	OpFreeze
	// OpFlush: see OpFreeze.
	OpFlush
	numOps
)

var opNames = [numOps]string{"", "connect", "retry", "dial", "disconnect", "send", "raw", "freeze", "flush"}

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
)

// Action is one thing a client intends to do at a time. Behaviours make
// them; a worker carries them out through a Driver. The zero value is not a
// valid action (it has no Op).
type Action struct {
	// At is the intended time, in ns since the run's start. An action
	// carried out late keeps its At: latency is measured from it.
	At int64
	Op Op
	// OpSend: what to send, the payload bytes per frame (inputs and
	// requests), the frames packed into the one write (≤ 0 means 1) and
	// the request-id choice.
	Kind  Kind
	Size  int
	Count int
	Reuse Reuse
	// OpConnect, OpRetry: the account the hello carries (0 means the
	// client's own).
	Account uint64
	// OpRaw: the bytes to write. They stay valid until the stream's next
	// Next call, no longer.
	Data []byte
}

// String formats an action for test failures and traces.
func (a Action) String() string {
	s := fmt.Sprintf("%d %v", a.At, a.Op)
	switch a.Op {
	case OpSend:
		s += fmt.Sprintf(" %v size=%d count=%d reuse=%d", a.Kind, a.Size, a.Count, a.Reuse)
	case OpRaw:
		s += fmt.Sprintf(" %x", a.Data)
	case OpConnect, OpRetry:
		if a.Account != 0 {
			s += fmt.Sprintf(" account=%d", a.Account)
		}
	}
	return s
}
