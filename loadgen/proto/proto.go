// Package proto is how the load generator's clients speak to a server: the
// frames a client writes (hello, input, request, ping) and how it reads
// the server's frames back (reply, pong, disconnect). The reference
// protocol of package loadgen/wire is one implementation (Reference); a
// studio drives its own game server by implementing Protocol for its own
// framing and registering it (Register), then naming it in a run
// (scenarios.Options.Protocol, sluice run --protocol NAME).
//
// A Protocol's methods are called from many goroutines at once: an
// implementation holds no mutable state of its own (a Reader holds the
// state of one connection and is used by one goroutine). Append methods
// append to dst and return it, as strconv.Append* do, so that clients
// reuse their buffers: they must not keep dst or payload.
//
// What the harness measures needs only what Protocol carries: which
// request a reply answers (its id), whether it was accepted, rejected by a
// limit (with a core.Reason value and a retry-after) or failed in the
// server's handler, and why a server disconnected a client. Inputs get no
// reply. Hostile behaviours that write malformed bytes of the reference
// framing (bad lengths, garbage, a frame dribbled a byte at a time) write
// the same bytes whatever the protocol: to another server they are
// garbage too.
package proto

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
)

// Channel is a channel a client sends inputs or requests on: the policy
// channel's name (move, ability, chat, purchase...) and its code in the
// reference protocol (its index in the policy). A protocol may frame
// either.
type Channel struct {
	Name string
	Code uint8
}

// Status is a reply's outcome.
type Status uint8

// The reply statuses (the reference protocol's values).
const (
	OK       Status = 0 // accepted and handled
	Rejected Status = 1 // a limit refused it: Frame.Reason says which
	Failed   Status = 2 // the server's own handler refused it, not a limit
)

// FrameKind says what a server's frame is.
type FrameKind uint8

// The frames a client reads.
const (
	Reply      FrameKind = iota + 1 // the answer to a request
	Pong                            // the answer to a ping
	Disconnect                      // the server is closing the connection, and why
)

// Frame is one frame a server sent, decoded.
type Frame struct {
	Kind FrameKind
	// ID is the request id a Reply answers.
	ID     uint64
	Status Status
	// Reason is a Rejected reply's or a Disconnect's reason, as a
	// core.Reason value (0 or an unknown value: the client counts an
	// UnknownReason).
	Reason uint8
	// RetryAfter is a Rejected reply's retry-after, in ns (0: none).
	RetryAfter uint64
	// Timestamp is a Pong's echo of its ping's id.
	Timestamp uint64
}

// Reader reads one connection's frames from the server, in order.
type Reader interface {
	// Next fills f with the next frame. It returns an error at the end of
	// the stream (io.EOF), on a read error, and on bytes that are not a
	// frame: the client then treats the connection as closed.
	Next(f *Frame) error
}

// Protocol frames what clients send and reads what servers answer. See
// the package documentation for its concurrency and buffer rules.
type Protocol interface {
	// Name is the protocol's registered name.
	Name() string
	// AppendHello appends the frame that logs a client in: token names
	// its account (the account number in decimal), label its population.
	AppendHello(dst, token, label []byte) []byte
	// AppendInput appends an input (no reply is expected) on ch.
	AppendInput(dst []byte, ch Channel, payload []byte) []byte
	// AppendRequest appends request id on ch: the server's reply carries id.
	AppendRequest(dst []byte, ch Channel, id uint64, payload []byte) []byte
	// AppendPing appends a ping whose pong echoes id.
	AppendPing(dst []byte, id uint64) []byte
	// NewReader returns a reader of the server's frames from r, one
	// connection's.
	NewReader(r io.Reader) Reader
}

// ErrUnknown is wrapped by Lookup's error for a name nothing registered.
var ErrUnknown = errors.New("proto: unknown protocol")

var (
	mu       sync.RWMutex
	registry = map[string]Protocol{ReferenceName: Reference{}}
)

// Register makes p available by its Name to Lookup (and so to scenarios
// and sluice run --protocol). It is meant for a program's init or main,
// before any run. It panics on an empty name or one already registered,
// as a programming error.
func Register(p Protocol) {
	mu.Lock()
	defer mu.Unlock()
	name := p.Name()
	if name == "" {
		panic("proto: Register of a protocol with no name")
	}
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("proto: Register of %q twice", name))
	}
	registry[name] = p
}

// Lookup returns the protocol registered as name ("" is the reference
// protocol).
func Lookup(name string) (Protocol, error) {
	if name == "" {
		name = ReferenceName
	}
	mu.RLock()
	defer mu.RUnlock()
	if p, ok := registry[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w %q (registered: %v)", ErrUnknown, name, namesLocked())
}

// Names returns the registered protocols' names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
