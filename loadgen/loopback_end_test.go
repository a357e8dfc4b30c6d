package loadgen

import (
	"context"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/loopback"
	"github.com/sluicedev/sluice/loadgen/record"
)

// A client that keeps writing after the server ended its connection (an
// oversize prefix, then 3000 frames due at the same instant, as a worker that
// is behind carries them out) is still recorded as disconnected by the
// server, with its reason: the writes after the end are lost, as the sim
// loses them, instead of failing and making the worker drop the connection
// itself before it read the server's Disconnect.
func TestLoopbackRecordsTheServersEndDespiteLaterWrites(t *testing.T) {
	acts := []behave.Action{{At: int64(10 * time.Millisecond), Op: behave.OpConnect}}
	at := int64(200 * time.Millisecond)
	acts = append(acts, behave.Action{At: at, Op: behave.OpRaw, Data: []byte{0xFF, 0xFF, 0xFF, 0xFF, 2}})
	for range 3000 {
		acts = append(acts, behave.Action{At: at, Op: behave.OpRaw, Data: []byte{0, 0, 0, 6, 2, 0}})
	}
	plan := behave.Plan{Seed: 1, Duration: time.Second, Populations: []behave.Population{{Name: "x", Clients: 1, Behaviour: &scripted{acts: acts}, Hostile: true}}}
	spec := RunSpec{Plan: plan, Workers: 1, Config: drive.RunConfig{Timeout: 300 * time.Millisecond}}
	sim, err := RunSim(context.Background(), spec, behave.DefaultPolicy())
	require.NoError(t, err)
	loop, err := RunLoopback(context.Background(), spec, behave.DefaultPolicy())
	require.NoError(t, err)
	for _, res := range []*Result{sim, loop} {
		assert.Equal(t, int64(1), res.Disconnected[0])
		assert.Equal(t, int64(1), res.Recorder.Count(0, behave.KindSession, record.Outcome(core.Oversize)), "the session ended Oversize")
		assert.Zero(t, res.Recorder.Count(0, behave.KindRaw, record.Disconnected), "no write failed")
	}
}

// A sim run whose account table fills (key churn pushing new identities
// into a small table of slow buckets) gives the same results on every run
// of the same seed: the tables are laid out from the seed, not from random
// hash secrets and GOMAXPROCS, which decided which keys a full table
// refused.
func TestSimIsDeterministicWhenATableFills(t *testing.T) {
	p := behave.DefaultPolicy()
	p.Tables.Accounts = new(uint32(300))
	p.Account = core.Budget{Rate: new(0.5), Burst: new(10.0)}
	plan := behave.Plan{Seed: 9, Duration: 10 * time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 4, Behaviour: &behave.Honest{}},
		{Name: "churn", Clients: 2, Behaviour: &behave.KeyChurn{Every: 5 * time.Millisecond}, Hostile: true},
	}}
	var first []byte
	for range 4 {
		res, err := RunSim(context.Background(), RunSpec{Plan: plan}, p)
		require.NoError(t, err)
		require.Positive(t, res.Recorder.Decisions(1)[record.Outcome(core.TableFull)], "the table filled")
		b, err := res.Canonical()
		require.NoError(t, err)
		if first == nil {
			first = b
			continue
		}
		require.Equal(t, first, b)
	}
}

// A write that times out (a server that stops reading) is the worker's
// error, not a lost write: only a socket the server ended loses writes.
func TestLoopbackWriteTimeoutIsAnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hold := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		<-hold // never reads
		c.Close()
	}()
	// The listener closes before the wait, so that a test that fails
	// before it dials does not wait on an Accept forever.
	defer func() { close(hold); ln.Close(); <-done }()
	const timeout = 200 * time.Millisecond
	l, err := loopback.NewLoopback(context.Background(), netip.MustParseAddrPort(ln.Addr().String()), drive.NewRealTime(), timeout)
	require.NoError(t, err)
	defer l.Stop()
	id := drive.ConnID{Client: 1, Gen: 1}
	require.NoError(t, l.Dial(id, 1))
	buf := make([]byte, 1<<20)
	for range 32 { // far more than the socket buffers of a peer that never reads hold
		start := time.Now()
		if err = l.Write(id, buf); err != nil {
			break
		}
		// Nothing drains the socket: a write that waited out the
		// timeout can only have timed out.
		require.Less(t, time.Since(start), timeout, "a write that timed out reported no error")
	}
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
}
