package core

import "fmt"

// Reason says why a message or take was not accepted. It is one small enum
// shared by every layer of the gate, the events, the stats, the wire replies
// and the reports. The zero value, None, means accepted. Reasons have stable
// names (String, MarshalText) for JSON and wire use; their numeric values are
// also stable and may be sent on the wire as one byte.
type Reason uint8

// The reasons. New ones are only ever appended.
const (
	None          Reason = iota // accepted
	ChannelLimit                // a channel / command-kind bucket is empty
	ByteLimit                   // the connection's byte budget is spent
	FrameLimit                  // the connection's frame budget is spent
	AccountLimit                // the account's bucket (across connections) is empty
	MatchLimit                  // the match / room / party aggregate bucket is empty
	AddressLimit                // the pre-auth source-address bucket is empty
	InFlightLimit               // too many requests of this kind in flight for the account
	Oversize                    // the frame is larger than the maximum frame size
	Malformed                   // the frame does not decode
	Duplicate                   // a request whose handler is still running was sent again
	Replay                      // a request id that already completed was sent again
	NoSession                   // no open session for this message
	Locked                      // the profile is inside a transaction (lock hook)
	Lockout                     // the key is locked out after repeated violations
	TableFull                   // the keyed table is full and nothing could be evicted
	QueueFull                   // the connection's command queue or pending bytes are full
	Closed                      // the limiter or gate was closed: fail closed
	ConnLimit                   // the source address or account already holds as many connections as the policy allows
	numReasons
)

var reasonNames = [numReasons]string{
	None:          "None",
	ChannelLimit:  "ChannelLimit",
	ByteLimit:     "ByteLimit",
	FrameLimit:    "FrameLimit",
	AccountLimit:  "AccountLimit",
	MatchLimit:    "MatchLimit",
	AddressLimit:  "AddressLimit",
	InFlightLimit: "InFlightLimit",
	Oversize:      "Oversize",
	Malformed:     "Malformed",
	Duplicate:     "Duplicate",
	Replay:        "Replay",
	NoSession:     "NoSession",
	Locked:        "Locked",
	Lockout:       "Lockout",
	TableFull:     "TableFull",
	QueueFull:     "QueueFull",
	Closed:        "Closed",
	ConnLimit:     "ConnLimit",
}

// NumReasons is the number of defined reasons, for tables indexed by Reason.
const NumReasons = int(numReasons)

// Reasons returns every defined reason in numeric order, None first.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// String returns the stable name of the reason.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Valid reports whether r is a defined reason.
func (r Reason) Valid() bool { return r < numReasons }

// MarshalText encodes the stable name.
func (r Reason) MarshalText() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("core: unknown reason %d", uint8(r))
	}
	return []byte(reasonNames[r]), nil
}

// UnmarshalText decodes a stable name.
func (r *Reason) UnmarshalText(b []byte) error {
	p, err := ParseReason(string(b))
	if err != nil {
		return err
	}
	*r = p
	return nil
}

// ParseReason returns the reason with the given stable name.
func ParseReason(s string) (Reason, error) {
	for i, n := range reasonNames {
		if n == s {
			return Reason(i), nil
		}
	}
	return None, fmt.Errorf("core: unknown reason %q", s)
}
