package loadgen

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/loopback"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/sluicedev/sluice/loadgen/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// mixedPlan is a small plan of honest, laggy and hostile clients.
func mixedPlan(seed uint64, d time.Duration) behave.Plan {
	return behave.Plan{Seed: seed, Duration: d, Populations: []behave.Population{
		{Name: "honest", Clients: 12, Behaviour: &behave.Honest{ChatEvery: 2 * time.Second, PurchaseEvery: 5 * time.Second}},
		{Name: "nat", Clients: 6, Behaviour: &behave.Honest{}, PerAddress: 3},
		{Name: "laggy", Clients: 4, Behaviour: &behave.Laggy{Honest: behave.Honest{ChatEvery: 2 * time.Second}, FreezeEvery: 2 * time.Second, DropEvery: 3 * time.Second}},
		{Name: "tiny-flood", Clients: 2, Behaviour: &behave.TinyFlood{}, Hostile: true},
		{Name: "replay", Clients: 2, Behaviour: &behave.Replay{}, Hostile: true},
		{Name: "bad-length", Clients: 1, Behaviour: &behave.BadLength{Mode: "mixed"}, Hostile: true},
		{Name: "malformed", Clients: 1, Behaviour: &behave.Malformed{Mode: "mixed"}, Hostile: true},
	}}
}

func runSim(t testing.TB, spec RunSpec, p core.Policy) *Result {
	t.Helper()
	res, err := RunSim(context.Background(), spec, p)
	require.NoError(t, err)
	require.True(t, res.Complete)
	return res
}

func canonical(t testing.TB, r *Result) []byte {
	t.Helper()
	b, err := r.Canonical()
	require.NoError(t, err)
	return b
}

func pop(t testing.TB, r *Result, label string) int {
	t.Helper()
	for i, l := range r.Labels {
		if l == label {
			return i
		}
	}
	t.Fatalf("no population %q", label)
	return -1
}

func sum(xs [record.NumOutcomes]int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

func TestSimIsDeterministic(t *testing.T) {
	spec := RunSpec{Plan: mixedPlan(7, 8*time.Second), Warmup: time.Second}
	a := runSim(t, spec, behave.DefaultPolicy())
	b := runSim(t, spec, behave.DefaultPolicy())
	ca, cb := canonical(t, a), canonical(t, b)
	require.Equal(t, ca, cb, "same seed, byte-identical results")
	assert.Greater(t, len(ca), 10_000, "the encoding holds the histograms")
	assert.Positive(t, a.Frames)
	assert.Equal(t, a.Frames, b.Frames)

	spec.Plan.Seed = 8
	c := runSim(t, spec, behave.DefaultPolicy())
	assert.NotEqual(t, ca, canonical(t, c), "another seed, other results")

	// The encoding sees a single changed count.
	a.Recorder.Add(0, behave.KindMove, record.Sent, 1)
	assert.NotEqual(t, cb, canonical(t, a))
}

func TestSimHonestAcceptedFloodDropped(t *testing.T) {
	res := runSim(t, RunSpec{Plan: mixedPlan(3, 10*time.Second)}, behave.DefaultPolicy())
	rec := res.Recorder
	for _, label := range []string{"honest", "nat", "laggy"} {
		p := pop(t, res, label)
		d := rec.Decisions(p)
		require.Positive(t, sum(d), label)
		assert.GreaterOrEqual(t, float64(d[record.Accepted])/float64(sum(d)), 0.99, "%s: the server accepts honest frames: %v", label, d)
		for _, k := range []behave.Kind{behave.KindHello, behave.KindChat, behave.KindPurchase, behave.KindPing} {
			o := rec.Outcomes(p, k)
			if k == behave.KindHello || k == behave.KindChat || k == behave.KindPing {
				assert.Positive(t, o[record.Accepted], "%s %v", label, k)
			}
			assert.Equal(t, o[record.Accepted], sum(o)-o[record.Disconnected]-o[record.NotSent]-o[record.HeldAtEnd], "%s %v: every reply says OK: %v", label, k, o)
		}
		assert.Zero(t, res.LockedOut[p], label)
		assert.Positive(t, rec.Count(p, behave.KindMove, record.Sent), label)
	}
	// Only laggy clients drop their own connections; the server cuts off no
	// honest client.
	assert.Zero(t, res.Disconnected[pop(t, res, "honest")])
	assert.Zero(t, res.Disconnected[pop(t, res, "nat")])

	p := pop(t, res, "tiny-flood")
	d := rec.Decisions(p)
	moves := rec.Outcomes(p, behave.KindMove)
	tried := moves[record.Sent] + moves[record.NotSent]
	admitted := d[record.Accepted] - rec.Count(p, behave.KindHello, record.Accepted)
	require.Positive(t, tried)
	assert.Less(t, float64(admitted)/float64(tried), 0.05, "the flood is mostly dropped: %d of %d moves admitted", admitted, tried)
	assert.Positive(t, d[core.ChannelLimit]+d[core.FrameLimit], "refused for its rate: %v", d)
	assert.Equal(t, int64(2), res.Disconnected[p])
	assert.Equal(t, int64(2), res.LockedOut[p])
	require.Len(t, res.CutOffs[p], 2)
	for _, c := range res.CutOffs[p] {
		assert.Less(t, c, 2*time.Second, "cut off quickly")
	}
	for _, label := range []string{"replay", "bad-length", "malformed"} {
		p := pop(t, res, label)
		assert.Positive(t, res.Disconnected[p], label)
		assert.Len(t, res.CutOffs[p], res.Clients[p], label)
	}
	assert.Equal(t, []int{12, 6, 4, 2, 2, 1, 1}, res.Clients)
}

func TestSimWarmupAndSeries(t *testing.T) {
	plan := mixedPlan(5, 6*time.Second)
	all := runSim(t, RunSpec{Plan: plan}, behave.DefaultPolicy())
	warm := runSim(t, RunSpec{Plan: plan, Warmup: 2 * time.Second}, behave.DefaultPolicy())
	// The warm-up changes nothing but what the Recorder keeps.
	assert.Equal(t, all.Series, warm.Series)
	for p := range all.Labels {
		require.Len(t, all.Series[p], 6)
		var total, after [record.NumOutcomes]int64
		var sent int64
		for k, pt := range all.Series[p] {
			assert.Equal(t, time.Duration(k)*time.Second, pt.Start)
			assert.Equal(t, pt.Outcomes[record.Accepted], pt.Accepted)
			sent += pt.Sent
			for o := range record.ServerReasons {
				total[o] += pt.Outcomes[o]
				if k >= 2 {
					after[o] += pt.Outcomes[o]
				}
			}
		}
		assert.Positive(t, sent, all.Labels[p])
		assert.Equal(t, total, all.Recorder.Decisions(p), "%s: the series holds every decision", all.Labels[p])
		assertSeriesOutcomesAreMessages(t, all, p)
		assert.Equal(t, after, warm.Recorder.Decisions(p), "%s: the recorder keeps those after the warm-up", all.Labels[p])
	}
	h := pop(t, all, "honest")
	assert.Less(t, warm.Recorder.Count(h, behave.KindMove, record.Sent), all.Recorder.Count(h, behave.KindMove, record.Sent))
	assert.Equal(t, all.Recorder.Stats, warm.Recorder.Stats, "Stats cover the whole run")
	var responses int64
	for _, pt := range all.Series[h] {
		if pt.Response != nil {
			responses += pt.Response.TotalCount()
		}
	}
	var replies int64
	for _, k := range []behave.Kind{behave.KindHello, behave.KindChat, behave.KindPurchase, behave.KindPing} {
		if hh := all.Recorder.Histogram(h, k, record.Response); hh != nil {
			replies += hh.TotalCount()
		}
	}
	assert.Equal(t, replies, responses, "the series' response times are the recorder's")
}

// assertSeriesOutcomesAreMessages checks that population p's series holds
// the client's outcomes of messages, not of the sessions the server ended:
// a session end is no message's drop.
func assertSeriesOutcomesAreMessages(t *testing.T, res *Result, p int) {
	t.Helper()
	var series, messages [record.NumOutcomes]int64
	for _, pt := range res.Series[p] {
		for o := record.ServerReasons; o < record.NumOutcomes; o++ {
			series[o] += pt.Outcomes[o]
		}
	}
	for k := range behave.NumKinds {
		if k == behave.KindSession {
			continue
		}
		o := res.Recorder.Outcomes(p, k)
		for i := record.ServerReasons; i < record.NumOutcomes; i++ {
			messages[i] += o[i]
		}
	}
	assert.Equal(t, messages, series, "%s: the series' client outcomes are the messages'", res.Labels[p])
}

// Slow clients are disconnected without a reason (a read timeout): the
// session ends are recorded as such, and the series' drops over time do
// not count them as dropped messages.
func TestSimSessionEndsAreNotSeriesDrops(t *testing.T) {
	plan := behave.Plan{Seed: 4, Duration: 20 * time.Second, Populations: []behave.Population{
		{Name: "slow", Clients: 3, Behaviour: &behave.Slowloris{}, Hostile: true},
	}}
	res := runSim(t, RunSpec{Plan: plan}, behave.DefaultPolicy())
	require.Positive(t, res.Recorder.Count(0, behave.KindSession, record.Disconnected), "the setup ends sessions without a reason")
	assertSeriesOutcomesAreMessages(t, res, 0)
}

func TestSimStallShowsInResponseTime(t *testing.T) {
	plan := behave.Plan{Seed: 1, Duration: 6 * time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 10, Behaviour: &behave.Honest{PingEvery: 50 * time.Millisecond, ChatEvery: -1, PurchaseEvery: -1}},
	}}
	run := func(stalls []sim.Stall) *record.Recorder {
		clients := plan.Clients()
		rec, err := record.NewRecorder(plan.Labels(), record.HistConfig{})
		require.NoError(t, err)
		simDriver, err := sim.NewSim(behave.DefaultPolicy(), sim.SimConfig{Stalls: stalls}, clients)
		require.NoError(t, err)
		w, err := drive.NewWorker(simDriver, rec, clients, drive.RunConfig{})
		require.NoError(t, err)
		require.NoError(t, w.Run(context.Background()))
		return rec
	}
	calm := run(nil)
	h := calm.Histogram(0, behave.KindPing, record.Response)
	require.NotNil(t, h)
	assert.Zero(t, h.Max(), "pings are answered at once")
	assert.LessOrEqual(t, calm.Histogram(0, behave.KindHello, record.Response).Max(), int64(0))

	// The server stops for a second: every ping meant for that second is
	// answered at its end, and each one's response time counts from when
	// it was meant to go, not just the first one's.
	rec := run([]sim.Stall{{At: 3 * time.Second, For: time.Second}})
	h = rec.Histogram(0, behave.KindPing, record.Response)
	require.NotNil(t, h)
	assert.GreaterOrEqual(t, h.Max(), int64(950*time.Millisecond))
	var slow int64
	for _, bar := range h.Distribution() {
		if bar.From >= int64(100*time.Millisecond) {
			slow += bar.Count
		}
	}
	// 10 clients × 20 pings per second, those meant in the first 900ms of
	// the stall: about 180.
	assert.Greater(t, slow, int64(150), "every ping in the stall is slow, not only one per client")
	assert.Less(t, slow, int64(200))
	assert.Equal(t, calm.Count(0, behave.KindPing, record.Accepted), rec.Count(0, behave.KindPing, record.Accepted), "all answered in the end")
	// The client was never late: the stall is the server's.
	assert.Zero(t, rec.Histogram(0, behave.KindPing, record.SendLag).Max())
	require.NoError(t, rec.CheckSendLag(1, time.Millisecond))
}

func TestSimEveryBehaviour(t *testing.T) {
	for _, name := range tcpBehaviourNames() {
		t.Run(name, func(t *testing.T) {
			b, err := behave.NewBehaviour(name)
			require.NoError(t, err)
			plan := behave.Plan{Seed: 11, Duration: 4 * time.Second, Populations: []behave.Population{
				{Name: "bystander", Clients: 2, Behaviour: &behave.Honest{}},
				{Name: name, Clients: 3, Behaviour: b, PerAccount: 3},
			}}
			res := runSim(t, RunSpec{Plan: plan, Config: drive.RunConfig{Timeout: 500 * time.Millisecond}}, behave.DefaultPolicy())
			assert.Positive(t, res.Recorder.Stats.Actions)
			assert.Positive(t, res.Frames)
			var sent int64
			for _, pt := range res.Series[1] {
				sent += pt.Sent
			}
			assert.Positive(t, sent, "it wrote something")
			assert.Zero(t, res.Recorder.TotalDropped())
		})
	}
}

func TestSimCancel(t *testing.T) {
	plan := behave.Plan{Seed: 1, Duration: 24 * time.Hour, Populations: []behave.Population{
		{Name: "honest", Clients: 50, Behaviour: &behave.Honest{}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	spec := RunSpec{Plan: plan, Interval: time.Minute, Progress: func(done, total time.Duration) {
		calls++
		assert.Equal(t, 24*time.Hour, total)
		if calls == 2 {
			cancel()
		}
	}}
	res, err := RunSim(ctx, spec, behave.DefaultPolicy())
	require.NoError(t, err)
	assert.False(t, res.Complete)
	assert.GreaterOrEqual(t, calls, 2)
	assert.Positive(t, res.Recorder.Stats.Actions)
	assert.Positive(t, res.Recorder.Count(0, behave.KindMove, record.Sent))

	// Cancelled before it starts: nothing, promptly.
	res, err = RunSim(ctx, spec, behave.DefaultPolicy())
	require.NoError(t, err)
	assert.False(t, res.Complete)
}

func TestLoopbackRun(t *testing.T) {
	plan := behave.Plan{Seed: 2, Duration: 2 * time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 6, Behaviour: &behave.Honest{ConnectSpread: 200 * time.Millisecond, ChatEvery: 300 * time.Millisecond, PingEvery: 100 * time.Millisecond}},
		{Name: "laggy", Clients: 2, Behaviour: &behave.Laggy{FreezeEvery: 500 * time.Millisecond, DropEvery: time.Second}},
		{Name: "tiny-flood", Clients: 1, Behaviour: &behave.TinyFlood{Persist: behave.Persist{ConnectSpread: 100 * time.Millisecond}}},
	}}
	var progress int
	res, err := RunLoopback(context.Background(), RunSpec{
		Plan: plan, Workers: 2, Config: drive.RunConfig{Timeout: 500 * time.Millisecond},
		Progress: func(done, total time.Duration) { progress++ },
	}, behave.DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	assert.Positive(t, progress)
	assert.Equal(t, []int{6, 2, 1}, res.Clients)
	assert.Positive(t, res.Frames)
	assert.Positive(t, res.ServerCPU)
	rec := res.Recorder
	h := pop(t, res, "honest")
	assert.Equal(t, int64(6), rec.Count(h, behave.KindHello, record.Accepted))
	assert.Positive(t, rec.Count(h, behave.KindPing, record.Accepted))
	assert.Positive(t, rec.Count(h, behave.KindChat, record.Accepted))
	assert.Positive(t, rec.Histogram(h, behave.KindPing, record.Response).TotalCount())
	d := rec.Decisions(h)
	assert.GreaterOrEqual(t, float64(d[record.Accepted])/float64(sum(d)), 0.99, "%v", d)
	assert.Zero(t, res.Disconnected[h])
	f := pop(t, res, "tiny-flood")
	assert.Equal(t, int64(1), res.Disconnected[f], "the server cut the flood off")
	assert.Positive(t, sum(rec.Decisions(f))-rec.Decisions(f)[record.Accepted])
	// The flood writes moves only: its decisions are all moves but its
	// hellos.
	fm := rec.KindDecisions(f, behave.KindMove)
	assert.Equal(t, sum(rec.Decisions(f))-sum(rec.KindDecisions(f, behave.KindHello)), sum(fm))
	assert.Positive(t, fm[core.ChannelLimit]+fm[core.FrameLimit])
	var sent int64
	for _, pt := range res.Series[h] {
		sent += pt.Sent
	}
	assert.Positive(t, sent)
}

func TestLoopbackEveryBehaviour(t *testing.T) {
	var pops []behave.Population
	for _, name := range tcpBehaviourNames() {
		b, err := behave.NewBehaviour(name)
		require.NoError(t, err)
		pops = append(pops, behave.Population{Name: name, Clients: 2, Behaviour: b, PerAccount: 2})
	}
	// Connect quickly: the run is short.
	for _, p := range pops {
		switch b := p.Behaviour.(type) {
		case *behave.Honest:
			b.ConnectSpread = 100 * time.Millisecond
		case *behave.Laggy:
			b.ConnectSpread = 100 * time.Millisecond
		case *behave.MassReconnect:
			b.ConnectSpread = 100 * time.Millisecond
		case *behave.SlotHold:
			b.ConnectSpread, b.PingEvery = 100*time.Millisecond, 200*time.Millisecond
		}
	}
	plan := behave.Plan{Seed: 4, Duration: 2 * time.Second, Populations: pops}
	res, err := RunLoopback(context.Background(), RunSpec{Plan: plan, Config: drive.RunConfig{Timeout: 300 * time.Millisecond}}, behave.DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	require.True(t, res.Complete)
	for p, label := range res.Labels {
		var sent int64
		for _, pt := range res.Series[p] {
			sent += pt.Sent
		}
		assert.Positive(t, sent, "%s wrote something", label)
	}
	assert.Positive(t, res.Frames)
}

// Runs against a server started on their own (as another process would
// run it) read the server's decisions through Remote.Stats: each run
// reports the change in the server's counters over that run only, the
// server keeps running, and a failing Stats stops the run at once.
func TestLoopbackRemote(t *testing.T) {
	p := behave.DefaultPolicy()
	srv, err := server.New(server.Config{Policy: p})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	defer srv.Close()
	ignore := goleak.IgnoreCurrent()
	plan := behave.Plan{Seed: 3, Duration: time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 4, Behaviour: &behave.Honest{ConnectSpread: 100 * time.Millisecond, PingEvery: 100 * time.Millisecond}},
		{Name: "tiny-flood", Clients: 1, Behaviour: &behave.TinyFlood{Persist: behave.Persist{ConnectSpread: 100 * time.Millisecond}}},
	}}
	spec := RunSpec{Plan: plan, Interval: 250 * time.Millisecond, Config: drive.RunConfig{Timeout: 300 * time.Millisecond}}
	for run := range 2 {
		before := srv.Stats()
		var reads int
		spec.Remote = &Remote{Addr: srv.Addr(), Stats: func(context.Context) (server.Stats, error) { reads++; return srv.Stats(), nil }}
		res, err := RunLoopback(context.Background(), spec, p)
		require.NoError(t, err)
		require.True(t, res.Complete)
		after := srv.Stats()
		// Before the run, at the end of the three intervals that end
		// inside it, and at least once at the end.
		assert.GreaterOrEqual(t, reads, 1+3+1, "run %d", run)
		assert.Equal(t, int64(after.Frames-before.Frames), res.Frames, "run %d", run)
		assert.Positive(t, res.ServerCPU, "run %d", run)
		h := pop(t, res, "honest")
		assert.Equal(t, int64(4), res.Recorder.Count(h, behave.KindHello, record.Accepted), "run %d", run)
		assert.Equal(t, int64(after.Populations["honest"].Frames-before.Populations["honest"].Frames), sum(res.Recorder.Decisions(h)),
			"run %d: every honest frame the server decided in this run, and only those", run)
		var seen int64
		for _, pt := range res.Series[h] {
			for o := range record.ServerReasons {
				seen += pt.Outcomes[o]
			}
		}
		assert.Equal(t, sum(res.Recorder.Decisions(h)), seen, "run %d: the series count this run's decisions", run)
		f := pop(t, res, "tiny-flood")
		assert.Positive(t, sum(res.Recorder.Decisions(f))-res.Recorder.Decisions(f)[record.Accepted], "run %d", run)
	}
	// A run cancelled midway still returns what it measured: the reads
	// that end it are not cut short by the cancel.
	ctx, cancel := context.WithCancel(context.Background())
	spec.Plan.Duration = 10 * time.Second
	spec.Progress = func(done, _ time.Duration) {
		if done >= 500*time.Millisecond {
			cancel()
		}
	}
	spec.Remote = &Remote{Addr: srv.Addr(), Stats: func(ctx context.Context) (server.Stats, error) { return srv.Stats(), ctx.Err() }}
	res, err := RunLoopback(ctx, spec, p)
	require.NoError(t, err)
	assert.False(t, res.Complete)
	assert.Positive(t, sum(res.Recorder.Decisions(pop(t, res, "honest"))))
	spec.Progress = nil

	// A server whose counters cannot be read stops the run at once.
	broken := errors.New("the child went away")
	reads := 0
	spec.Remote = &Remote{Addr: srv.Addr(), Stats: func(context.Context) (server.Stats, error) {
		if reads++; reads > 1 {
			return server.Stats{}, broken
		}
		return srv.Stats(), nil
	}}
	start := time.Now()
	_, err = RunLoopback(context.Background(), spec, p)
	assert.ErrorIs(t, err, broken)
	assert.Less(t, time.Since(start), 5*time.Second, "stopped at the first failed read, not at the end of the plan")
	// And one that cannot be read at all sends nothing.
	spec.Remote = &Remote{Addr: srv.Addr(), Stats: func(context.Context) (server.Stats, error) { return server.Stats{}, broken }}
	frames := srv.Stats().Frames
	_, err = RunLoopback(context.Background(), spec, p)
	assert.ErrorIs(t, err, broken)
	assert.Equal(t, frames, srv.Stats().Frames)
	goleak.VerifyNone(t, ignore)
}

func TestLoopbackCancel(t *testing.T) {
	plan := behave.Plan{Seed: 1, Duration: time.Minute, Populations: []behave.Population{
		{Name: "honest", Clients: 4, Behaviour: &behave.Honest{ConnectSpread: 50 * time.Millisecond}},
		{Name: "tiny-flood", Clients: 1, Behaviour: &behave.TinyFlood{}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	spec := RunSpec{Plan: plan, Warmup: 30 * time.Second, Progress: func(done, total time.Duration) {
		if done >= time.Second {
			cancel()
		}
	}}
	res, err := RunLoopback(ctx, spec, behave.DefaultPolicy())
	require.NoError(t, err)
	goleak.VerifyNone(t)
	assert.False(t, res.Complete)
	assert.Positive(t, res.Recorder.Stats.Actions)
	assert.Zero(t, res.Recorder.Count(0, behave.KindHello, record.Accepted), "cancelled inside the warm-up: nothing measured")
	assert.Zero(t, sum(res.Recorder.Decisions(0)))
	var hellos int64
	for _, pt := range res.Series[0] {
		hellos += pt.Accepted
	}
	assert.Positive(t, hellos, "the series saw the start")
}

func noStats(context.Context) (server.Stats, error) { return server.Stats{}, nil }

func TestRunSpecErrors(t *testing.T) {
	good := mixedPlan(1, 5*time.Second)
	cases := []struct {
		spec  RunSpec
		field string
	}{
		{RunSpec{Plan: good, Warmup: 5 * time.Second}, "Warmup"},
		{RunSpec{Plan: good, Warmup: -1}, "Warmup"},
		{RunSpec{Plan: good, Interval: time.Microsecond}, "Interval"},
		{RunSpec{Plan: good, TickRate: -1}, "TickRate"},
		{RunSpec{Plan: good, Workers: -1}, "Workers"},
		{RunSpec{Plan: good, Config: drive.RunConfig{Timeout: -1}}, "Timeout"},
		{RunSpec{Plan: behave.Plan{Duration: time.Second}}, "Populations"},
		{RunSpec{Plan: good, Remote: &Remote{}}, "Remote"},
		{RunSpec{Plan: good, Remote: &Remote{Addr: mustAddrPort(t, "127.0.0.1:0"), Stats: noStats}}, "Remote"},
		{RunSpec{Plan: good, Remote: &Remote{Addr: mustAddrPort(t, "10.0.0.1:80"), Stats: noStats}}, "Remote"},
	}
	for _, c := range cases {
		for _, run := range []func(context.Context, RunSpec, core.Policy) (*Result, error){RunSim, RunLoopback} {
			_, err := run(context.Background(), c.spec, behave.DefaultPolicy())
			var pe *behave.ParamError
			require.ErrorAs(t, err, &pe, c.field)
			assert.Equal(t, c.field, pe.Field)
		}
	}
	remote := &Remote{Addr: mustAddrPort(t, "127.0.0.1:1"), Stats: noStats}
	_, err := RunSim(context.Background(), RunSpec{Plan: good, Remote: remote}, behave.DefaultPolicy())
	var pe *behave.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "Remote", pe.Field)
	_, err = RunLoopback(context.Background(), RunSpec{Plan: good, Remote: remote, NoLimits: true}, behave.DefaultPolicy())
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "NoLimits", pe.Field)
	_, err = RunLoopback(context.Background(), RunSpec{Plan: good, Remote: remote, TickRate: 60}, behave.DefaultPolicy())
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "TickRate", pe.Field)
	bad := behave.DefaultPolicy()
	bad.Channels[2].Class = core.ClassInput // chat as an input
	_, err = RunSim(context.Background(), RunSpec{Plan: good}, bad)
	assert.ErrorIs(t, err, behave.ErrChannel)
	_, err = RunSim(context.Background(), RunSpec{Plan: good}, core.Policy{Channels: []core.Channel{{Name: "move"}}})
	assert.ErrorIs(t, err, core.ErrPolicy)
	var nilRes *Result
	_, err = nilRes.Canonical()
	assert.ErrorIs(t, err, ErrNoResult)
	_, err = loopback.NewLoopback(context.Background(), mustAddrPort(t, "10.0.0.1:80"), drive.NewRealTime(), 0)
	assert.ErrorIs(t, err, loopback.ErrNotLoopback)
}

func TestChannelsOf(t *testing.T) {
	p := behave.DefaultPolicy()
	ch, err := behave.ChannelsOf(&p)
	require.NoError(t, err)
	assert.Equal(t, behave.DefaultChannels, ch)
	for _, k := range []behave.Kind{behave.KindMove, behave.KindAbility, behave.KindChat, behave.KindPurchase} {
		_, code, ok := k.Wire()
		require.True(t, ok)
		assert.Equal(t, k.String(), p.Channels[code].Name)
	}
	// The scenario policy's layout: move, aim, ability, chat, purchase.
	q := core.Policy{Channels: []core.Channel{
		{Name: "move", Class: core.ClassInput}, {Name: "aim", Class: core.ClassInput},
		{Name: "ability", Class: core.ClassPredicted}, {Name: "chat", Class: core.ClassRequest},
	}}
	ch, err = behave.ChannelsOf(&q)
	require.NoError(t, err)
	assert.Equal(t, behave.Channels{-1, 0, 2, 3, -1, -1, -1, -1}, ch)

	// A kind without a channel is not sent.
	plan := behave.Plan{Seed: 1, Duration: 3 * time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 3, Behaviour: &behave.Honest{PurchaseEvery: 200 * time.Millisecond}},
	}}
	res := runSim(t, RunSpec{Plan: plan}, q)
	assert.Zero(t, res.Recorder.Count(0, behave.KindPurchase, record.Accepted))
	assert.Positive(t, res.Recorder.Count(0, behave.KindPurchase, record.NotSent))
	assert.Positive(t, res.Recorder.Count(0, behave.KindChat, record.Accepted)+res.Recorder.Count(0, behave.KindMove, record.Sent))
	// No ping channel: the server's own ping bucket answers.
	assert.Positive(t, res.Recorder.Count(0, behave.KindPing, record.Accepted))

	for _, bad := range []core.Channel{
		{Name: "move", Class: core.ClassRequest},
		{Name: "purchase", Class: core.ClassInput},
		{Name: "chat", Class: core.ClassRequest, Direction: core.ServerToClient},
	} {
		_, err := behave.ChannelsOf(&core.Policy{Channels: []core.Channel{bad}})
		assert.ErrorIs(t, err, behave.ErrChannel, bad.Name)
	}
}

func TestArrivalsAndWindows(t *testing.T) {
	p := behave.Plan{Seed: 3, Duration: 10 * time.Second, Populations: []behave.Population{
		{Name: "all", Clients: 3, Behaviour: &behave.Honest{}, Start: time.Second},
		{Name: "ramp", Clients: 4, Behaviour: &behave.Honest{}, Arrival: behave.Arrival{Kind: behave.ArrivalRamp, Over: 4 * time.Second}},
		{Name: "ramp-window", Clients: 2, Behaviour: &behave.Honest{}, Start: 2 * time.Second, Stop: 6 * time.Second, Arrival: behave.Arrival{Kind: behave.ArrivalRamp}},
		{Name: "poisson", Clients: 50, Behaviour: &behave.Honest{}, Arrival: behave.Arrival{Kind: behave.ArrivalPoisson, Rate: 10}},
	}}
	require.NoError(t, p.Validate())
	cs := p.Clients()
	for _, c := range cs[:3] {
		assert.Equal(t, sec, c.Arrive)
		assert.Equal(t, sec, c.Start)
		assert.Equal(t, 10*sec, c.End)
	}
	for i, c := range cs[3:7] {
		assert.Equal(t, int64(i)*sec, c.Arrive)
	}
	assert.Equal(t, []int64{2 * sec, 4 * sec}, []int64{cs[7].Arrive, cs[8].Arrive})
	assert.Equal(t, 6*sec, cs[7].End)
	var prev int64
	for _, c := range cs[9:] {
		assert.Greater(t, c.Arrive, prev)
		prev = c.Arrive
	}
	// 50 clients at 10/s arrive over about 5s.
	assert.InDelta(t, 5*sec, float64(prev), float64(2*sec))
	again := p.Clients()
	assert.Equal(t, cs[20].Arrive, again[20].Arrive, "seeded")
	p.Seed = 4
	assert.NotEqual(t, cs[20].Arrive, p.Clients()[20].Arrive)
	p.Seed = 3

	// Clients connect after they arrive, and the windowed population sends
	// nothing after its Stop.
	for _, c := range cs {
		acts := behave.Collect(c.Stream(), 1_000_000)
		require.NotEmpty(t, acts)
		assert.GreaterOrEqual(t, acts[0].At, c.Arrive)
		assert.Less(t, acts[len(acts)-1].At, c.End)
	}
	res := runSim(t, RunSpec{Plan: p, Config: drive.RunConfig{Timeout: 500 * time.Millisecond}}, behave.DefaultPolicy())
	w := pop(t, res, "ramp-window")
	for k, pt := range res.Series[w] {
		if k < 2 || k >= 6 {
			assert.Zero(t, pt.Sent, "second %d", k)
		} else {
			assert.Positive(t, pt.Sent, "second %d", k)
		}
	}
	// Its clients left (closing their connections) rather than being cut off
	// by the server's idle timeout.
	assert.Zero(t, res.Disconnected[w])
	assert.Equal(t, int64(2), res.Recorder.Count(w, behave.KindHello, record.Accepted))

	bad := []behave.Population{
		{Name: "a", Clients: 1, Behaviour: &behave.Honest{}, Start: 10 * time.Second},
		{Name: "a", Clients: 1, Behaviour: &behave.Honest{}, Start: -1},
		{Name: "a", Clients: 1, Behaviour: &behave.Honest{}, Start: 2 * time.Second, Stop: time.Second},
		{Name: "a", Clients: 1, Behaviour: &behave.Honest{}, Stop: 11 * time.Second},
		{Name: "a", Clients: 1, Behaviour: &behave.Honest{}, Arrival: behave.Arrival{Kind: "burst"}},
		{Name: "a", Clients: 1, Behaviour: &behave.Honest{}, Arrival: behave.Arrival{Kind: behave.ArrivalPoisson}},
		{Name: "a", Clients: 1, Behaviour: &behave.Honest{}, Arrival: behave.Arrival{Kind: behave.ArrivalRamp, Over: -1}},
	}
	for i, b := range bad {
		err := (&behave.Plan{Duration: 10 * time.Second, Populations: []behave.Population{b}}).Validate()
		var pe *behave.ParamError
		assert.True(t, errors.As(err, &pe), "case %d: %v", i, err)
	}
}

func mustAddrPort(t testing.TB, s string) netip.AddrPort {
	t.Helper()
	a, err := netip.ParseAddrPort(s)
	require.NoError(t, err)
	return a
}

// BenchmarkSimThroughput runs a mixed plan (honest players, laggy ones and
// floods) in the sim driver and reports the frames the simulated server
// decided per second of wall time.
func BenchmarkSimThroughput(b *testing.B) {
	plan := throughputPlan() // its results are pinned in TestSimGolden
	var frames int64
	b.ReportAllocs()
	for b.Loop() {
		res, err := RunSim(context.Background(), RunSpec{Plan: plan}, behave.DefaultPolicy())
		if err != nil {
			b.Fatal(err)
		}
		frames += res.Frames
	}
	b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
}

func TestSimKindDecisions(t *testing.T) {
	res := runSim(t, RunSpec{Plan: mixedPlan(9, 6*time.Second)}, behave.DefaultPolicy())
	rec := res.Recorder
	// Honest frames are decided under the kind they were sent as: every
	// move written was accepted, every pong is an accepted ping.
	h := pop(t, res, "honest")
	assert.Equal(t, rec.Count(h, behave.KindMove, record.Sent), rec.KindDecisions(h, behave.KindMove)[record.Accepted])
	assert.Equal(t, rec.Count(h, behave.KindPing, record.Accepted), rec.KindDecisions(h, behave.KindPing)[record.Accepted])
	assert.Equal(t, rec.Count(h, behave.KindChat, record.Accepted), rec.KindDecisions(h, behave.KindChat)[record.Accepted])
	assert.Equal(t, rec.Count(h, behave.KindHello, record.Accepted), rec.KindDecisions(h, behave.KindHello)[record.Accepted])
	// Frames that do not decode are raw.
	m := pop(t, res, "malformed")
	assert.Positive(t, rec.KindDecisions(m, behave.KindRaw)[core.Malformed])
	assert.Positive(t, rec.KindDecisions(pop(t, res, "bad-length"), behave.KindRaw)[core.Oversize])
	f := pop(t, res, "tiny-flood")
	assert.Positive(t, rec.KindDecisions(f, behave.KindMove)[core.ChannelLimit]+rec.KindDecisions(f, behave.KindMove)[core.FrameLimit])
}
