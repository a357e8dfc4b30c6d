package udpconn_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/internal/udpconn"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/sluicedev/sluice/loadgen/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// eventually waits up to d for cond.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// startUDPServer starts a reference server listening on a loopback UDP
// port, with the default policy; the caller closes it.
func startUDPServer(t *testing.T) *server.Server {
	t.Helper()
	s, err := server.New(server.Config{Policy: behave.DefaultPolicy(), UDP: server.UDPConfig{Addr: "127.0.0.1:0"}})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	return s
}

// A replay socket replays the cookie its first socket obtained, from
// another port of the same address, against the reference server over
// real sockets: no replay opens a session, the server counts every one as
// a bad cookie, what it sends the replaying port (a fresh cookie each)
// is no more than what it received from it, and an honest session beside
// it opens and is answered. Close ends the replay socket's reader.
func TestReplaySocketReplaysTheCookieFromAnotherPort(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := startUDPServer(t)
	defer s.Close() // before goleak's check, which a Cleanup would run after
	srv := s.UDPAddr()
	ctx := context.Background()
	src := netip.MustParseAddr("127.0.0.1")

	r, err := udpconn.DialReplay(ctx, srv, src)
	require.NoError(t, err)
	defer r.Close()
	read := make(chan error, 1)
	go func() { // the loopback driver's reader, which would hand on frames
		var b [512]byte
		for {
			if n, err := r.Read(b[:]); err != nil {
				read <- err
				return
			} else if n > 0 {
				read <- nil // a frame: the server answered with Data
				return
			}
		}
	}()
	own := r.LocalAddr().(*net.UDPAddr).AddrPort()
	alt := r.ReplayAddr()
	require.Equal(t, own.Addr(), alt.Addr(), "the replay socket is on the same address")
	require.NotEqual(t, own.Port(), alt.Port(), "and another port")

	const rounds, replays = 5, 4
	var zero [wire.CookieSize]byte
	for i := range rounds {
		id := uint64(1000 + i)
		fetch, err := wire.AppendHandshake(nil, id, nil, []byte("7"), nil)
		require.NoError(t, err)
		r.Write(fetch)
		eventually(t, 2*time.Second, "a cookie for the first socket", func() bool {
			_, n := r.Cookie()
			return n == uint64(i+1)
		})
		replay, _ := wire.AppendHandshake(nil, id, zero[:], []byte("7"), nil)
		for range replays {
			r.Write(replay)
			time.Sleep(2 * time.Millisecond)
		}
	}
	eventually(t, 2*time.Second, "every replay answered", func() bool { return r.ReplayStats().Received == rounds*replays })

	// An honest session beside it: the server does accept cookies.
	c, err := udpconn.Dial(ctx, srv, src)
	require.NoError(t, err)
	defer c.Close()
	hello, _ := wire.AppendHello(nil, []byte("8"), nil)
	c.Write(hello)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [512]byte
	n, err := c.Read(b[:])
	require.NoError(t, err)
	var m wire.Msg
	_, err = wire.Decode(b[:n], wire.DefaultMaxFrame, &m)
	require.NoError(t, err)
	assert.Equal(t, wire.TypeReply, m.Type)
	assert.Equal(t, wire.StatusOK, m.Status)

	st, u := r.ReplayStats(), s.UDPStats()
	assert.Equal(t, uint64(rounds*replays), st.Replays)
	assert.Zero(t, st.Unarmed, "every replay had a cookie to carry")
	assert.Equal(t, uint64(1), u.Opened, "only the honest session opened: no replay did")
	assert.Equal(t, uint64(rounds*replays), u.BadCookies, "every replay refused as a bad cookie")
	assert.Equal(t, st.Received, st.Cookies, "the replaying port got cookies only")
	assert.LessOrEqual(t, st.RecvBytes, st.SentBytes, "no more sent to the replaying port than received from it")
	assert.Equal(t, uint64(rounds*replays*wire.MinHandshake), st.SentBytes)
	assert.Equal(t, uint64(rounds*replays*wire.CookieDatagramSize), st.RecvBytes)
	assert.LessOrEqual(t, u.UnverifiedSent, u.UnverifiedBytes)

	require.NoError(t, c.Close())
	r.Close()
	r.Close() // a second Close (the driver's and its reader's) is harmless
	select {
	case err := <-read:
		assert.ErrorIs(t, err, net.ErrClosed, "the first socket's reader ends at Close, having seen no frame")
	case <-time.After(2 * time.Second):
		t.Fatal("the reader did not end at Close")
	}
}

// A replay written before the first socket has any cookie is not sent
// (it would carry the zeros the behaviour wrote: a forgery, not a
// replay): it is counted Unarmed, and the server sees nothing from the
// replaying port.
func TestReplaySocketSendsNoReplayWithoutACookie(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := startUDPServer(t)
	defer s.Close() // before goleak's check, which a Cleanup would run after
	r, err := udpconn.DialReplay(context.Background(), s.UDPAddr(), netip.MustParseAddr("127.0.0.1"))
	require.NoError(t, err)
	defer r.Close()

	var zero [wire.CookieSize]byte
	replay, err := wire.AppendHandshake(nil, 77, zero[:], []byte("7"), nil)
	require.NoError(t, err)
	const n = 3
	for range n {
		r.Write(replay)
	}
	// A datagram from the first socket after them: once the server has
	// counted it, it would have counted replays sent before it on the
	// same loopback path too.
	probe, err := wire.AppendHandshake(nil, 78, nil, []byte("7"), nil)
	require.NoError(t, err)
	r.Write(probe)
	go func() { // the driver's reader: Read keeps the cookies; it ends at Close
		var b [512]byte
		for {
			if _, err := r.Read(b[:]); err != nil {
				return
			}
		}
	}()
	eventually(t, 2*time.Second, "the probe answered with a cookie", func() bool {
		_, got := r.Cookie()
		return got == 1
	})
	st := r.ReplayStats()
	assert.Equal(t, uint64(n), st.Unarmed)
	assert.Zero(t, st.Replays)
	assert.Zero(t, st.SentBytes)
	assert.Zero(t, s.UDPStats().BadCookies, "no replay reached the server")
}
