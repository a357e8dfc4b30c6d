package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/loopback"
	"github.com/sluicedev/sluice/loadgen/proto"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A run against a server it cannot read (a Remote without Stats, as
// sluice run --target drives one) measures what its clients saw: no
// server decision is recorded, the replies' decisions feed the series,
// inputs are Sent with no fate, and ServerView says so. The same run
// with the server's counters read decides every frame.
func TestLoopbackRemoteWithoutStats(t *testing.T) {
	p := behave.DefaultPolicy()
	srv, err := server.New(server.Config{Policy: p})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	defer srv.Close()
	ignore := goleak.IgnoreCurrent()
	plan := behave.Plan{Seed: 5, Duration: time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 4, Behaviour: &behave.Honest{ConnectSpread: 100 * time.Millisecond, PingEvery: 100 * time.Millisecond}},
	}}
	spec := RunSpec{Plan: plan, Interval: 250 * time.Millisecond, Config: drive.RunConfig{Timeout: 300 * time.Millisecond}}
	spec.Remote = &Remote{Addr: srv.Addr()}
	before := srv.Stats().Frames
	res, err := RunLoopback(context.Background(), spec, p)
	require.NoError(t, err)
	require.True(t, res.Complete)
	assert.False(t, res.ServerView)
	assert.Zero(t, res.Frames, "no server counters were read")
	assert.Zero(t, res.ServerCPU)
	assert.Positive(t, srv.Stats().Frames-before, "the server was driven")
	h := pop(t, res, "honest")
	assert.Zero(t, sum(res.Recorder.Decisions(h)), "no decision is the server's own")
	assert.Equal(t, int64(4), res.Recorder.Count(h, behave.KindHello, record.Accepted), "every hello's reply")
	assert.Positive(t, res.Recorder.Count(h, behave.KindMove, record.Sent), "inputs written, with no reply")
	var accepted, seen int64
	for _, pt := range res.Series[h] {
		accepted += pt.Accepted
		seen += pt.Outcomes[record.Accepted]
	}
	var replied int64
	for k := range behave.NumKinds {
		replied += res.Recorder.Count(h, k, record.Accepted)
	}
	assert.Positive(t, accepted)
	assert.Equal(t, seen, accepted, "the series counts the accepted replies")
	assert.GreaterOrEqual(t, accepted, replied, "the series also covers the warm-up (none here): at least the recorder's")

	spec.Remote.Stats = func(context.Context) (server.Stats, error) { return srv.Stats(), nil }
	res, err = RunLoopback(context.Background(), spec, p)
	require.NoError(t, err)
	assert.True(t, res.ServerView)
	assert.Positive(t, res.Recorder.Decisions(pop(t, res, "honest"))[record.Accepted])
	goleak.VerifyNone(t, ignore)
}

// Only a Remote the user named may be outside the loopback range, and
// only to a loopback server does each address group dial from its own
// 127.x.y.z.
func TestRemoteAddressesAndSourceBinding(t *testing.T) {
	good := behave.Plan{Seed: 1, Duration: time.Second, Populations: []behave.Population{{Name: "h", Clients: 1, Behaviour: &behave.Honest{}}}}
	far := mustAddrPort(t, "192.0.2.1:7777") // TEST-NET-1: never dialled here
	_, err := RunSpec{Plan: good, Remote: &Remote{Addr: far}}.normalize()
	assert.Error(t, err, "a non-loopback address the user did not name")
	_, err = RunSpec{Plan: good, Remote: &Remote{Addr: far, AnyAddress: true}}.normalize()
	assert.NoError(t, err)

	rt := drive.NewRealTime()
	l, err := loopback.NewSocketDriver(context.Background(), far, rt, time.Second, true, proto.Reference{})
	require.NoError(t, err)
	assert.False(t, l.Bind, "clients of a server elsewhere dial from the host's address")
	_, err = loopback.NewSocketDriver(context.Background(), far, rt, time.Second, false, proto.Reference{})
	assert.ErrorIs(t, err, loopback.ErrNotLoopback)
	l, err = loopback.NewSocketDriver(context.Background(), mustAddrPort(t, "127.0.0.1:7777"), rt, time.Second, true, proto.Reference{})
	require.NoError(t, err)
	assert.True(t, l.Bind)
}
