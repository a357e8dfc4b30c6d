package trace

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/sluicedev/sluice/core"
)

// Version is the format version this package writes. It reads it and
// version 1 (one zstd frame a block, its entries' fields in a row).
const Version = 2

// JSONLVersion is the version of the JSON Lines form (its first line's
// "trace" field).
const JSONLVersion = 1

// The columns of a version 2 block, in their order in the block.
const (
	colHead     = iota // head bytes, one an entry
	colTime0           // time deltas' least significant bytes, one an entry
	colTime1           //
	colTime2           //
	colTime3           // their most significant bytes
	colSession         // sessions (uvarint)
	colDecision        // decision bytes
	colKind            // messages' kinds and sizes, reads' sizes (uvarint): a size follows its kind
	colRequest         // messages' and dones' requests (uvarint)
	colMatch           // messages' matches (uvarint)
	colOther           // the rest, entry after entry: wide times, addresses, accounts, labels, kind definitions, lost counts
	numCols
)

// wideTime in a time delta's four bytes says the delta is in the other
// column.
const wideTime = 0xffffffff

const magic = "SLUTRACE"

// Limits of the format.
const (
	maxHeader   = 1 << 20
	maxRawBlock = 16 << 20
	maxString   = 255
	maxKindName = 64
	maxKinds    = 255
	blockHead   = 16
)

// Op is a record's operation. Its values are the format's.
type Op uint8

// The operations.
const (
	OpOpen Op = 1 + iota
	OpAuth
	OpRead
	OpMessage
	OpDone
	OpClose
	OpUnchecked
	OpLabel
	opKind // a kind definition: internal to a block, never handed out
	OpLost
	numOps
)

var opNames = [numOps]string{
	OpOpen: "open", OpAuth: "auth", OpRead: "read", OpMessage: "message", OpDone: "done",
	OpClose: "close", OpUnchecked: "unchecked", OpLabel: "label", opKind: "kind", OpLost: "lost",
}

func (o Op) String() string {
	if o < numOps && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// ParseOp returns the Op of a name ("open", "message", ...).
func ParseOp(s string) (Op, bool) {
	for i, n := range opNames {
		if n == s && Op(i) != opKind {
			return Op(i), true
		}
	}
	return 0, false
}

// Label says what a session is, as far as the server knew.
type Label uint8

// The labels.
const (
	Unknown Label = iota
	Honest
	Hostile
	numLabels
)

var labelNames = [numLabels]string{"unknown", "honest", "hostile"}

func (l Label) String() string {
	if l < numLabels {
		return labelNames[l]
	}
	return fmt.Sprintf("Label(%d)", uint8(l))
}

// ParseLabel returns the Label of a name.
func ParseLabel(s string) (Label, bool) {
	for i, n := range labelNames {
		if n == s {
			return Label(i), true
		}
	}
	return 0, false
}

// Decision is what the recording gate decided.
type Decision struct {
	Action core.Action
	Reason core.Reason
	Shadow bool
}

func (d Decision) byte() byte {
	b := byte(d.Action&3) | byte(d.Reason)<<3
	if d.Shadow {
		b |= 4
	}
	return b
}

func decisionOf(b byte) (Decision, error) {
	d := Decision{Action: core.Action(b & 3), Reason: core.Reason(b >> 3), Shadow: b&4 != 0}
	if int(d.Reason) >= core.NumReasons {
		return d, fmt.Errorf("reason %d is not defined", d.Reason)
	}
	return d, nil
}

// Record is one entry of a trace. Which fields are set depends on Op:
//
//	OpOpen       Session (0: refused), Decision, Addr or AddrHash
//	OpAuth       Session, Decision, Account
//	OpRead       Session, Decision, Size
//	OpMessage    Session, Decision, Kind, Size, Request, Match, Flags
//	OpUnchecked  as OpMessage
//	OpDone       Session, Request
//	OpClose      Session
//	OpLabel      Session, Label, Group
//	OpLost       Lost
//
// Time is ns since the header's Origin. The zero value is no record.
type Record struct {
	Op       Op
	Time     int64
	Session  uint64
	Decision Decision
	Kind     string // a channel name of the recording policy; "" for none
	Size     uint32
	Request  uint64
	Match    uint64
	Flags    core.MessageFlags
	Addr     netip.AddrPort // OpOpen, not hashed
	AddrHash uint64         // OpOpen, hashed
	Account  uint64         // a keyed hash when the header says Hashed
	Label    Label
	Group    string
	Lost     uint64
}

// IsMessage reports whether the record is a frame (OpMessage or OpUnchecked).
func (r *Record) IsMessage() bool { return r.Op == OpMessage || r.Op == OpUnchecked }

// Header is a trace's header.
type Header struct {
	// Recorder names what wrote the trace.
	Recorder string `json:"recorder"`
	// Origin is the wall time of record time 0.
	Origin time.Time `json:"origin"`
	// PolicyDigest is PolicyDigest of the recording policy, "" if unknown.
	PolicyDigest string `json:"policy_digest"`
	// Hashed says accounts and addresses are keyed hashes.
	Hashed bool `json:"hashed"`
	// Note is free text.
	Note string `json:"note,omitempty"`
}

// Hasher turns accounts and addresses into keyed hashes (see the package
// doc). The zero value is not usable; make one with NewHasher. Safe for
// concurrent use.
type Hasher struct{ key []byte }

// NewHasher returns a hasher with key (at least 16 bytes).
func NewHasher(key []byte) (*Hasher, error) {
	if len(key) < 16 {
		return nil, errors.New("trace: a hash key must be at least 16 bytes")
	}
	return &Hasher{key: append([]byte(nil), key...)}, nil
}

func (h *Hasher) sum(b []byte) uint64 {
	m := hmac.New(sha256.New, h.key)
	m.Write(b)
	v := binary.BigEndian.Uint64(m.Sum(nil))
	if v == 0 {
		v = 1
	}
	return v
}

// Account returns the keyed hash of an account.
func (h *Hasher) Account(a uint64) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], a)
	return h.sum(b[:])
}

// Addr returns the keyed hash of an address (its port left out).
func (h *Hasher) Addr(a netip.Addr) uint64 {
	b := a.As16()
	return h.sum(b[:])
}

// validKindName reports whether s may name a kind.
func validKindName(s string) bool {
	if len(s) == 0 || len(s) > maxKindName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
