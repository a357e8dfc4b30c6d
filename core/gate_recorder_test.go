package core

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustBuffer(t testing.TB, n int) *RecordBuffer {
	t.Helper()
	b, err := NewRecordBuffer(n)
	require.NoError(t, err)
	return b
}

func TestRecordBufferSize(t *testing.T) {
	for _, n := range []int{0, 1, 3, 100, 1 << 25} {
		_, err := NewRecordBuffer(n)
		assert.ErrorIs(t, err, ErrRecordBufferSize, "size %d", n)
	}
}

// A full buffer drops and counts; it never blocks, and what it kept
// drains in order.
func TestRecordBufferFull(t *testing.T) {
	b := mustBuffer(t, 4)
	for i := range 6 {
		kept := b.Push(GateRecord{Op: OpClose, Time: int64(i)})
		assert.Equal(t, i < 4, kept, "push %d", i)
	}
	assert.EqualValues(t, 2, b.Lost())
	got := b.Drain(nil)
	require.Len(t, got, 4)
	for i, r := range got {
		assert.EqualValues(t, i, r.Time)
	}
	assert.Empty(t, b.Drain(nil))
	assert.True(t, b.Push(GateRecord{Op: OpClose, Time: 9}), "room again after the drain")
	assert.EqualValues(t, 9, b.Drain(nil)[0].Time)
}

// Many producers and one consumer: every record pushed is either drained
// exactly once or counted lost (run with -race).
func TestRecordBufferConcurrent(t *testing.T) {
	b := mustBuffer(t, 256)
	const producers, each = 8, 20000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				b.Push(GateRecord{Op: OpCheck, Session: Session(p), Request: uint64(i)})
			}
		}()
	}
	stop := make(chan struct{})
	seen := make([]map[uint64]bool, producers)
	for i := range seen {
		seen[i] = map[uint64]bool{}
	}
	var got int
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf []GateRecord
		for {
			stopped := false
			select {
			case <-stop: // every push has returned: one more drain takes the rest
				stopped = true
			default:
			}
			buf = b.Drain(buf[:0])
			for _, r := range buf {
				if seen[r.Session][r.Request] {
					t.Error("record drained twice")
				}
				seen[r.Session][r.Request] = true
				got++
			}
			if stopped {
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	assert.EqualValues(t, producers*each, uint64(got)+b.Lost())
}

// The gate pushes every call with its verdict; without a recorder it
// pushes nothing and the hot path still allocates nothing.
func TestGateRecords(t *testing.T) {
	b := mustBuffer(t, 64)
	g := mustGate(t, testPolicy(), WithRecorder(b))
	assert.Same(t, b, g.Recorder())
	s := mustOpen(t, g, addrA, 10)
	mustAuth(t, g, s, 7, 20)
	assert.True(t, g.Read(s, 100, 30).OK())
	assert.True(t, g.Check(Message{Session: s, Kind: kChat, Size: 40, Request: 5, Flags: FlagCharged}, 40).OK())
	g.Done(s, 5)
	v := g.Check(Message{Session: s, Kind: kMove, Size: 4000}, 50)
	assert.Equal(t, Oversize, v.Reason)
	g.Close(s, 60)
	g.Close(s, 70) // no session: still recorded (the writer drops it)
	got := b.Drain(nil)
	require.Len(t, got, 8)
	ops := []RecordOp{OpOpen, OpAuthenticate, OpRead, OpCheck, OpDone, OpCheck, OpClose, OpClose}
	for i, r := range got {
		assert.Equal(t, ops[i], r.Op, "record %d", i)
		assert.Equal(t, s, r.Session, "record %d", i)
	}
	assert.Equal(t, addrA, got[0].Addr)
	assert.EqualValues(t, 7, got[1].Account)
	assert.EqualValues(t, 100, got[2].Size)
	assert.Equal(t, GateRecord{Op: OpCheck, Time: 40, Session: s, Request: 5, Size: 40, Kind: kChat, Flags: FlagCharged}, got[3])
	assert.EqualValues(t, 5, got[4].Request)
	assert.Equal(t, Oversize, got[5].Reason)
	assert.Equal(t, Drop, got[5].Action)
	assert.EqualValues(t, 60, got[6].Time)

	// With a recorder, Check still allocates nothing.
	now := int64(100)
	allocs := testing.AllocsPerRun(1000, func() {
		now += 1000
		g2 := g
		g2.Check(Message{Session: 12345, Kind: kMove, Size: 10}, now)
		b.Drain(got[:0])
	})
	assert.Zero(t, allocs)
}

func TestGateRecordsShadow(t *testing.T) {
	p := testPolicy()
	p.Shadow = true
	b := mustBuffer(t, 16)
	g := mustGate(t, p, WithRecorder(b))
	s := mustOpen(t, g, addrA, 0)
	v := g.Check(Message{Session: s, Kind: kMove, Size: 4000}, 1)
	require.True(t, v.Shadow)
	got := b.Drain(nil)
	require.Len(t, got, 2)
	assert.Equal(t, GateRecord{Op: OpCheck, Time: 1, Session: s, Size: 4000, Kind: kMove, Action: Accept, Reason: Oversize, Shadow: true}, got[1])
}
