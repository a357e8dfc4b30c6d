package behave

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// udp-cookie-replay's stream: a dial, then rounds of a handshake without
// a cookie followed by Replays handshakes with the same connection id and
// Hello carrying a placeholder cookie (zeros, which the replay socket
// replaces), each Every (±10%) after the one before.
func TestUDPCookieReplayRounds(t *testing.T) {
	b := &UDPCookieReplay{Replays: 3, Every: 20 * time.Millisecond, Persist: Persist{RetryEvery: -1}}
	p := planOf(3, 2*time.Second, b, 2)
	clients := p.Clients()
	for ci, acts := range actionsOf(t, p) {
		require.Equal(t, OpDial, acts[0].Op)
		raw := acts[1:]
		require.GreaterOrEqual(t, len(raw), 4*10, "client %d: rounds in 2s", ci)
		token := []byte(strconv.FormatUint(clients[ci].Account, 10))
		var id uint64
		var zero [wire.CookieSize]byte
		for i, a := range raw {
			require.Equal(t, OpRaw, a.Op)
			require.GreaterOrEqual(t, len(a.Data), wire.MinHandshake, "padded as an honest client's")
			k, conn, rest, err := wire.ParseDatagram(a.Data)
			require.NoError(t, err)
			require.Equal(t, wire.DatagramHandshake, k)
			cookie, hello, err := wire.ParseHandshake(rest, wire.DefaultMaxFrame)
			require.NoError(t, err)
			var m wire.Msg
			_, err = wire.Decode(hello, wire.DefaultMaxFrame, &m)
			require.NoError(t, err)
			assert.Equal(t, token, m.Token, "the client's account")
			if i%4 == 0 {
				assert.Empty(t, cookie, "round %d obtains a cookie", i/4)
				assert.NotEqual(t, id, conn, "a fresh connection id each round")
				id = conn
			} else {
				assert.Equal(t, zero[:], cookie, "a replay's placeholder")
				assert.Equal(t, id, conn, "a replay names the id of its round")
			}
			if i > 0 {
				gap := a.At - raw[i-1].At
				assert.True(t, gap >= 18e6 && gap <= 22e6, "gap %v", time.Duration(gap))
			}
		}
	}
}

func TestUDPCookieReplayValidate(t *testing.T) {
	for _, c := range []struct {
		b     *UDPCookieReplay
		field string
	}{
		{&UDPCookieReplay{Replays: -1}, "Replays"},
		{&UDPCookieReplay{Replays: maxCount + 1}, "Replays"},
		{&UDPCookieReplay{Every: -time.Millisecond}, "Every"},
		{&UDPCookieReplay{Every: 25 * time.Hour}, "Every"},
		{&UDPCookieReplay{Persist: Persist{RetryEvery: 25 * time.Hour}}, "RetryEvery"},
	} {
		var pe *ParamError
		require.ErrorAs(t, c.b.Validate(), &pe, c.field)
		assert.Equal(t, "udp-cookie-replay", pe.Owner)
		assert.Equal(t, c.field, pe.Field)
	}
	assert.NoError(t, (&UDPCookieReplay{}).Validate())
	assert.True(t, UDPOnly(&UDPCookieReplay{}))
	assert.True(t, UDPReplaysCookies(&UDPCookieReplay{}))
	assert.False(t, UDPReplaysCookies(&UDPHandshakeFlood{}))
}
