package record

import (
	"fmt"
	"strings"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// Outcome is what became of one message (or connection attempt), as the
// client saw it. Values below ServerReasons are the server's reasons, by
// core.Reason's stable numeric value (Accepted = core.None = 0); the rest
// are outcomes only the client can see. Every outcome has a stable name.
type Outcome uint8

// ServerReasons is the number of outcome values reserved for the server's
// reasons (core.Reason values, which are only ever appended).
const ServerReasons = 64

// The outcomes.
const (
	// Accepted: the server replied OK (core.None).
	Accepted Outcome = 0

	// Sent: written, and no reply is expected (inputs, raw bytes).
	Sent Outcome = ServerReasons + iota - 1
	// NotSent: the client had no connection (or its held buffer was full),
	// so the message was never written.
	NotSent
	// Timeout: no reply came within the timeout.
	Timeout
	// Disconnected: the connection ended (or a write failed) before the
	// reply came; for KindSession, the server closed a session without
	// saying why.
	Disconnected
	// Refused: the connection could not be opened.
	Refused
	// Failed: the server's own handler refused the request (StatusFailed),
	// after every limit passed.
	Failed
	// Overflow: written, but the client's in-flight table was full, so the
	// reply is not awaited.
	Overflow
	// UnknownReason: a rejection whose reason is 0 or not a known value.
	UnknownReason
	// HeldAtEnd: in flight rather than dropped when the run (or its
	// client's window) ended: the client still held it (frozen, or
	// logging in), never written; or, in a run that reached its end, it
	// was due before the end but the worker, behind its schedule, had not
	// got to it (Stats.Overdue; its send lag is recorded); or, in a run
	// stopped early (cancelled), it was written and its reply, still
	// within its timeout, was awaited.
	HeldAtEnd
	numOutcomes
)

// NumOutcomes is the number of outcome values, for tables indexed by
// Outcome.
const NumOutcomes = int(numOutcomes)

var clientOutcomeNames = [...]string{"Sent", "NotSent", "Timeout", "Disconnected", "Refused", "Failed", "Overflow", "UnknownReason", "HeldAtEnd"}

// ReasonOutcome returns the outcome of a rejection with the given wire
// reason byte.
func ReasonOutcome(reason uint8) Outcome {
	if reason == 0 || reason >= ServerReasons || !core.Reason(reason).Valid() {
		return UnknownReason
	}
	return Outcome(reason)
}

// ReplyOutcome returns the outcome of a reply.
func ReplyOutcome(s wire.Status, reason uint8) Outcome {
	switch s {
	case wire.StatusOK:
		return Accepted
	case wire.StatusFailed:
		return Failed
	}
	return ReasonOutcome(reason)
}

// IsServerReason reports whether o is one of the server's reasons
// (Accepted included).
func (o Outcome) IsServerReason() bool { return o < ServerReasons }

// IsClientDrop reports whether o is an outcome only the client saw that
// counts as a drop: the message never reached the server (NotSent,
// Refused) or its reply never came (Timeout, Disconnected, Overflow). The
// other client outcomes say it was written with no reply expected (Sent),
// restate a decision the server counted itself (Failed, UnknownReason), or
// that it was still in flight when the run ended (HeldAtEnd).
func (o Outcome) IsClientDrop() bool {
	switch o {
	case NotSent, Refused, Timeout, Disconnected, Overflow:
		return true
	}
	return false
}

// String returns the stable name: "Accepted", a core.Reason name, or a
// client outcome's name.
func (o Outcome) String() string {
	switch {
	case o == Accepted:
		return "Accepted"
	case o < ServerReasons:
		return core.Reason(o).String()
	case o < numOutcomes:
		return clientOutcomeNames[o-Sent]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Valid reports whether o is a defined outcome.
func (o Outcome) Valid() bool {
	return o < ServerReasons && core.Reason(o).Valid() || o >= Sent && o < numOutcomes
}

// ParseOutcome returns the outcome with the given stable name.
func ParseOutcome(s string) (Outcome, error) {
	if s == "Accepted" {
		return Accepted, nil
	}
	for i, n := range clientOutcomeNames {
		if n == s {
			return Sent + Outcome(i), nil
		}
	}
	if r, err := core.ParseReason(s); err == nil && r != core.None && int(r) < ServerReasons {
		return Outcome(r), nil
	}
	return 0, fmt.Errorf("loadgen: unknown outcome %q", s)
}

// MarshalText encodes the stable name.
func (o Outcome) MarshalText() ([]byte, error) {
	if !o.Valid() {
		return nil, fmt.Errorf("loadgen: unknown outcome %d", uint8(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText decodes a stable name.
func (o *Outcome) UnmarshalText(b []byte) error {
	p, err := ParseOutcome(strings.TrimSpace(string(b)))
	if err == nil {
		*o = p
	}
	return err
}
