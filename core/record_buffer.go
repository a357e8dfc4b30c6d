package core

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicedev/sluice/internal/relstore"
)

// RecordBuffer is a bounded, lock-free, multi-producer single-consumer
// queue of GateRecords: the gate pushes a record for every call it
// decides (see WithRecorder), a server may push its own (OpUnchecked,
// OpLabel), and one goroutine drains them (package trace writes them to a
// file). A push never blocks and never allocates: when the buffer is full
// the record is dropped and counted (Lost), so a slow disk costs records,
// never a stalled message.
//
// A slot is one 64-byte cache line: a sequence number and seven words
// holding the fields the record's Op uses (see the RecordOp constants),
// packed, with no pointer in them, so a push writes one line, and neither
// the copy nor the buffer costs the garbage collector anything. An
// address keeps its IP and port, not its zone; a label's group is kept as
// an index into a small table of the groups seen (the first 1024 distinct
// groups; later ones are recorded as ""). A producer claims a position
// with one CompareAndSwap on the tail, after checking against the
// consumer's published head that the position's slot is free, fills the
// slot and publishes it with a release store of its sequence number
// (internal/relstore: on amd64 a plain store, where sync/atomic's Store
// is a locked XCHG that costs a push as much as its claim); the consumer
// publishes its head once every 256 records it takes, so it never writes
// to a slot's line and the line does not travel back to it. The release
// store and the atomic load of the sequence (and the atomic store and
// load of the head) order the slot's plain words between producer and
// consumer.
//
// Make one with NewRecordBuffer; the zero value is not usable. Push is
// safe for concurrent use; Drain must be called by one goroutine at a
// time.
type RecordBuffer struct {
	_     [cacheLinePad]byte
	tail  atomic.Uint64
	_     [cacheLinePad]byte
	head  atomic.Uint64 // published by the consumer: every position below it is free
	_     [cacheLinePad]byte
	lost  atomic.Uint64
	_     [cacheLinePad]byte
	next  uint64 // the consumer's alone: the next position it takes
	mask  uint64
	slots []recordSlot

	groupMu sync.Mutex               // serializes additions to groups
	groups  atomic.Pointer[[]string] // index → group; index 0 is ""
}

// recordSlot is one record, packed (see packRecord), and its sequence
// number: pos+1 once the record of position pos is in it.
type recordSlot struct {
	seq atomic.Uint64
	w   [7]uint64
}

// A slot is one cache line, and the slice of them (a large allocation) is
// page-aligned, so no two slots share a line.
var _ [64 - unsafe.Sizeof(recordSlot{})]struct{}
var _ [unsafe.Sizeof(recordSlot{}) - 64]struct{}

// maxGroups bounds the group table.
const maxGroups = 1024

// drainPublish is how many records Drain takes between publications of
// its head.
const drainPublish = 256

// ErrRecordBufferSize is returned by NewRecordBuffer for a size that is not
// a power of two in [2, 1<<24].
var ErrRecordBufferSize = errors.New("core: record buffer size must be a power of two in [2, 16777216]")

// NewRecordBuffer returns an empty buffer of size slots (a power of two).
func NewRecordBuffer(size int) (*RecordBuffer, error) {
	if size < 2 || size > 1<<24 || size&(size-1) != 0 {
		return nil, ErrRecordBufferSize
	}
	b := &RecordBuffer{mask: uint64(size - 1), slots: make([]recordSlot, size)}
	b.groups.Store(&[]string{""})
	return b, nil
}

// Push adds r, or counts it lost when the buffer is full. It reports
// whether r was kept. Only the fields r's Op uses are kept.
func (b *RecordBuffer) Push(r GateRecord) bool {
	var g uint64
	if r.Op == OpLabel && r.Group != "" {
		g = b.groupIndex(r.Group)
	}
	slot, pos := b.claim()
	if slot == nil {
		return false
	}
	packRecord(&slot.w, &r, g)
	relstore.Store(&slot.seq, pos+1) // publish: the consumer reads w after seeing this
	return true
}

// claim takes the next position for a producer, who then fills the slot
// and publishes it by storing pos+1 in its seq; nil (and a lost record
// counted) when the buffer is full. The head only grows, so a position
// found free before the CompareAndSwap is still free after it.
func (b *RecordBuffer) claim() (*recordSlot, uint64) {
	pos := b.tail.Load()
	for {
		if pos-b.head.Load() > b.mask { // the slot still holds the record of a lap ago: full
			b.lost.Add(1)
			return nil, 0
		}
		if b.tail.CompareAndSwap(pos, pos+1) {
			return &b.slots[pos&b.mask], pos
		}
		pos = b.tail.Load()
	}
}

// pushCheck is Push of a Check's record, written straight into its slot.
func (b *RecordBuffer) pushCheck(m Message, v Verdict, now int64) {
	slot, pos := b.claim()
	if slot == nil {
		return
	}
	slot.w = [7]uint64{
		uint64(now), uint64(m.Session), m.Request, m.Match,
		uint64(m.Size) | uint64(m.Kind)<<32 | uint64(OpCheck)<<48 | uint64(m.Flags)<<56,
		verdictWord(v.Action, v.Reason, v.Shadow),
		0,
	}
	relstore.Store(&slot.seq, pos+1)
}

// Drain appends to dst the records published so far, in the order their
// positions were claimed, at most the buffer's size of them, and returns
// it. It stops at the first position whose producer has claimed it but
// not yet published it.
func (b *RecordBuffer) Drain(dst []GateRecord) []GateRecord {
	return b.DrainN(dst, len(b.slots))
}

// DrainN is Drain of at most n records: a consumer that drains into a
// batch of a fixed size keeps its memory bounded by it.
func (b *RecordBuffer) DrainN(dst []GateRecord, n int) []GateRecord {
	groups := *b.groups.Load()
	start := b.next
	for b.next-start < uint64(min(max(n, 0), len(b.slots))) {
		slot := &b.slots[b.next&b.mask]
		if slot.seq.Load() != b.next+1 {
			break
		}
		dst = append(dst, GateRecord{})
		unpackRecord(&dst[len(dst)-1], &slot.w, groups)
		b.next++
		if (b.next-start)%drainPublish == 0 {
			b.head.Store(b.next)
		}
	}
	b.head.Store(b.next)
	return dst
}

// Lost returns how many records were dropped because the buffer was full.
func (b *RecordBuffer) Lost() uint64 { return b.lost.Load() }

// Cap returns the buffer's size in records.
func (b *RecordBuffer) Cap() int { return len(b.slots) }

// groupIndex returns the index of group in the table, adding it if there
// is room (copy on write: producers read the table without a lock), 0 if
// there is not.
func (b *RecordBuffer) groupIndex(group string) uint64 {
	for i, s := range *b.groups.Load() {
		if s == group {
			return uint64(i)
		}
	}
	b.groupMu.Lock()
	defer b.groupMu.Unlock()
	old := *b.groups.Load()
	for i, s := range old {
		if s == group {
			return uint64(i)
		}
	}
	if len(old) >= maxGroups {
		return 0
	}
	t := append(append(make([]string, 0, len(old)+1), old...), group)
	b.groups.Store(&t)
	return uint64(len(t) - 1)
}

// The words of a packed record:
//
//	w[0] Time
//	w[1] Session
//	w[2] Account (OpAuthenticate), the address's first 8 bytes (OpOpen), Request (others)
//	w[3] the address's last 8 bytes (OpOpen), Match (others)
//	w[4] Size | Kind<<32 | Op<<48 | Flags<<56
//	w[5] verdictWord | Label<<24 | Port<<32 | address form<<48 (0 none, 4, 6)
//	w[6] the group's index (OpLabel)
//
// An address is in its 16-byte form, IPv4 mapped into ::ffff:0:0/96.

func verdictWord(a Action, r Reason, shadow bool) uint64 {
	w := uint64(a) | uint64(r)<<8
	if shadow {
		w |= 1 << 16
	}
	return w
}

func packRecord(w *[7]uint64, r *GateRecord, group uint64) {
	a, m := r.Request, r.Match
	v := verdictWord(r.Action, r.Reason, r.Shadow) | uint64(r.Label)<<24
	switch r.Op {
	case OpAuthenticate:
		a = r.Account
	case OpOpen:
		ip := r.Addr.Addr()
		if ip.IsValid() {
			b := ip.As16()
			a, m = binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
			form := uint64(6)
			if ip.Is4() {
				form = 4
			}
			v |= uint64(r.Addr.Port())<<32 | form<<48
		} else {
			a, m = 0, 0
		}
	}
	*w = [7]uint64{
		uint64(r.Time), uint64(r.Session), a, m,
		uint64(r.Size) | uint64(r.Kind)<<32 | uint64(r.Op)<<48 | uint64(r.Flags)<<56,
		v, group,
	}
}

func unpackRecord(r *GateRecord, w *[7]uint64, groups []string) {
	*r = GateRecord{
		Time: int64(w[0]), Session: Session(w[1]),
		Size: uint32(w[4]), Kind: uint16(w[4] >> 32), Op: RecordOp(w[4] >> 48), Flags: MessageFlags(w[4] >> 56),
		Action: Action(w[5]), Reason: Reason(w[5] >> 8), Shadow: w[5]>>16&1 != 0, Label: uint8(w[5] >> 24),
	}
	switch r.Op {
	case OpAuthenticate:
		r.Account = w[2]
	case OpOpen:
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], w[2])
		binary.BigEndian.PutUint64(b[8:], w[3])
		port := uint16(w[5] >> 32)
		switch w[5] >> 48 {
		case 4:
			r.Addr = netip.AddrPortFrom(netip.AddrFrom16(b).Unmap(), port)
		case 6:
			r.Addr = netip.AddrPortFrom(netip.AddrFrom16(b), port)
		}
	default:
		r.Request, r.Match = w[2], w[3]
	}
	if r.Op == OpLabel && w[6] < uint64(len(groups)) {
		r.Group = groups[w[6]]
	}
}
