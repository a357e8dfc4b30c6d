package core

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every field an op uses survives the packed slot, at the extremes of its
// range; an address keeps its form (IPv4, IPv6, IPv4 mapped into IPv6, none).
func TestRecordBufferPacking(t *testing.T) {
	const big = ^uint64(0) - 1
	all := GateRecord{Time: -5, Session: Session(big), Size: ^uint32(0), Kind: ^uint16(0), Flags: FlagMalformed | FlagCharged,
		Action: Disconnect, Reason: Closed, Shadow: true}
	recs := []GateRecord{
		{Op: OpOpen, Time: 1, Session: 3, Addr: netip.MustParseAddrPort("192.0.2.1:65535"), Action: Disconnect, Reason: Lockout},
		{Op: OpOpen, Time: 2, Addr: netip.MustParseAddrPort("[2001:db8::1]:1")},
		{Op: OpOpen, Time: 3, Session: 4, Addr: netip.MustParseAddrPort("[::ffff:10.0.0.1]:80")},
		{Op: OpOpen, Time: 4},
		{Op: OpAuthenticate, Time: 5, Session: 3, Account: big, Action: Disconnect, Reason: ConnLimit},
		{Op: OpRead, Time: 6, Session: 3, Size: 1 << 31, Action: Drop, Reason: ByteLimit, Shadow: true},
		func() GateRecord { r := all; r.Op, r.Request, r.Match = OpCheck, big, big-1; return r }(),
		func() GateRecord { r := all; r.Op, r.Request = OpUnchecked, 9; return r }(),
		{Op: OpDone, Session: 3, Request: big},
		{Op: OpClose, Time: 8, Session: 3},
		{Op: OpLabel, Time: 9, Session: 3, Label: 2, Group: "raiders"},
		{Op: OpLabel, Time: 10, Session: 4, Label: 1, Group: "players"},
		{Op: OpLabel, Time: 11, Session: 5, Group: "raiders"},
		{Op: OpLabel, Time: 12, Session: 6},
	}
	b := mustBuffer(t, 16)
	for _, r := range recs {
		require.True(t, b.Push(r))
	}
	got := b.Drain(nil)
	require.Len(t, got, len(recs))
	for i := range recs {
		assert.Equal(t, recs[i], got[i], "record %d (%v)", i, recs[i].Op)
	}
	assert.Equal(t, []string{"", "raiders", "players"}, *b.groups.Load())
}

// The group table is bounded: groups past it are recorded as "".
func TestRecordBufferGroupsBounded(t *testing.T) {
	b := mustBuffer(t, 2)
	for i := range maxGroups + 10 {
		b.Push(GateRecord{Op: OpLabel, Group: fmt.Sprint("g", i)})
		b.Drain(nil)
	}
	assert.Len(t, *b.groups.Load(), maxGroups)
	b.Push(GateRecord{Op: OpLabel, Group: "g1"})
	b.Push(GateRecord{Op: OpLabel, Group: "late"})
	got := b.Drain(nil)
	assert.Equal(t, "g1", got[0].Group)
	assert.Equal(t, "", got[1].Group)
}

// One Drain takes at most the buffer's size of records, so a consumer's
// batch stays bounded however fast producers refill what it frees.
func TestRecordBufferDrainBounded(t *testing.T) {
	b := mustBuffer(t, 8)
	for i := range 8 {
		b.Push(GateRecord{Op: OpClose, Time: int64(i)})
	}
	got := b.Drain(nil)
	require.Len(t, got, 8)
	for i := range 8 {
		b.Push(GateRecord{Op: OpClose, Time: int64(8 + i)})
	}
	got = b.DrainN(got[:0], 3)
	require.Len(t, got, 3)
	assert.EqualValues(t, 8, got[0].Time)
	assert.True(t, b.Push(GateRecord{Op: OpClose, Time: 16}), "the three taken are free again")
	got = b.Drain(got[:0])
	require.Len(t, got, 6)
	assert.EqualValues(t, 11, got[0].Time)
	assert.EqualValues(t, 16, got[5].Time)
	assert.Zero(t, b.Lost())
}
