package loadgen

import (
	"context"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestLoopbackUDPCookieReplay runs udp-cookie-replay against the
// reference server over udp, beside honest players, through the loopback
// driver (a server of the test's own, so that its UDP counters can be
// read): every session the server opened is an honest player's (no
// replay, each carrying a real cookie from another port, opened one), the
// server counted the replays as bad cookies, sent unverified sources no
// more than it received from them (in all), the honest players kept their service,
// and every goroutine ended. (The replay socket's own byte counts are
// udpconn's TestReplaySocketReplaysTheCookieFromAnotherPort.)
func TestLoopbackUDPCookieReplay(t *testing.T) {
	p := behave.DefaultPolicy()
	srv, err := server.New(server.Config{Policy: p, UDP: server.UDPConfig{Addr: "127.0.0.1:0"}})
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	defer srv.Close()
	ignore := goleak.IgnoreCurrent()

	const replays, replayers = 5, 10
	plan := behave.Plan{Seed: 9, Duration: 2 * time.Second, Populations: []behave.Population{
		{Name: "honest", Clients: 4, Behaviour: &behave.Honest{ConnectSpread: 100 * time.Millisecond, PingEvery: 100 * time.Millisecond}},
		{Name: "replay", Clients: replayers, Behaviour: &behave.UDPCookieReplay{Replays: replays, Persist: behave.Persist{ConnectSpread: 100 * time.Millisecond}}, Hostile: true},
	}}
	spec := RunSpec{Plan: plan, Transport: drive.TransportUDP, Workers: 2, Config: drive.RunConfig{Timeout: time.Second}}
	spec.Remote = &Remote{Addr: srv.UDPAddr(), Stats: func(context.Context) (server.Stats, error) { return srv.Stats(), nil }}
	res, err := RunLoopback(context.Background(), spec, p)
	require.NoError(t, err)
	goleak.VerifyNone(t, ignore)
	require.True(t, res.Complete)
	rec := res.Recorder
	assertHonestServed(t, res)

	u := srv.UDPStats()
	t.Logf("udp stats %+v", u)
	r := pop(t, res, "replay")
	w := written(rec, r, behave.KindRaw) // handshakes: rounds × (1 + replays), the last round of each client perhaps cut short
	require.Positive(t, w)
	assert.Zero(t, sum(rec.KindDecisions(r, behave.KindRaw)), "no replay reached a session")
	assert.Equal(t, uint64(written(rec, pop(t, res, "honest"), behave.KindHello)), u.Opened, "every session opened is an honest player's: no replay opened one")
	// Each client's handshakes are rounds of 1 + replays, all but its last
	// whole: its replays are its handshakes less its rounds, and its
	// rounds at most one more than its whole rounds.
	// Replays written before a client's first cookie came back are not
	// sent (Unarmed): under load the first cookie can take longer than
	// the behaviour's Every.
	t.Logf("cookie replays %+v", res.CookieReplays)
	replaysWritten := uint64(w - w/(1+replays)) // at most
	require.Positive(t, res.CookieReplays.Replays, "replays were sent")
	assert.Less(t, res.CookieReplays.Unarmed, replaysWritten/2, "most replays had a cookie to carry")
	most := replaysWritten - res.CookieReplays.Unarmed
	assert.LessOrEqual(t, u.BadCookies, most, "only replays are bad cookies")
	assert.GreaterOrEqual(t, u.BadCookies+replayers, most, "every replay counted as a bad cookie")
	// The replays went out from the replay sockets, each with a cookie
	// the server had sent the client, as many as the server counted bad.
	assert.Equal(t, u.BadCookies, res.CookieReplays.Replays, "every bad cookie the server counted is a replay from a replay socket")
	assert.Zero(t, u.CookiesLimited)
	assert.LessOrEqual(t, u.UnverifiedSent, u.UnverifiedBytes, "no more sent to unverified sources than received from them")
}
