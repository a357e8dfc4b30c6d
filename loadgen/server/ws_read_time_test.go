package server

import (
	"maps"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen/internal/wsraw"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// The messages one socket read completes are decided at that read's time,
// as the frames of one read over TCP are: a Hello and a run of malformed
// frames sent in one write end the same way over both transports, after
// the same number of strikes (decided at their own times, microseconds
// apart, the messages saw a strike score decayed just below each stage's
// threshold, and the connection outlived the TCP one by a stage).
func TestWSMessagesOfOneReadAreDecidedAtItsTime(t *testing.T) {
	s := startServer(t, wsConfig())
	var bad []byte
	for range 12 {
		bad = wire.AppendHeader(bad, 1, wire.TypeInput) // an input too short for its channel
	}

	hello, _ := wire.AppendHello(nil, []byte("21"), []byte("tcp"))
	c, err := dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.nc.Close() })
	c.mustWrite(t, append(hello, bad...))
	if _, _, err := c.waitClosed(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	hello, _ = wire.AppendHello(nil, []byte("22"), []byte("ws"))
	b := wsraw.AppendFrame(nil, true, wsraw.OpBinary, hello)
	for off := 0; off < len(bad); off += 5 {
		b = wsraw.AppendFrame(b, true, wsraw.OpBinary, bad[off:off+5])
	}
	nc := rawWS(t, s.WSAddr())
	nc.Write(b)
	readClosed(t, nc, 5*time.Second)

	st := settledStats(t, s)
	tcp, ws := st.Populations["tcp"], st.Populations["ws"]
	if len(tcp.Disconnects) == 0 {
		t.Fatalf("the TCP connection was not ended by its strikes: %+v", tcp)
	}
	if !maps.Equal(tcp.Disconnects, ws.Disconnects) || !maps.Equal(tcp.Channels["(unknown)"].Dropped, ws.Channels["(unknown)"].Dropped) {
		t.Fatalf("over TCP: disconnects %v, drops %v; over WebSocket: disconnects %v, drops %v",
			tcp.Disconnects, tcp.Channels["(unknown)"].Dropped, ws.Disconnects, ws.Channels["(unknown)"].Dropped)
	}
	t.Logf("both: disconnects %v, drops %v", ws.Disconnects, ws.Channels["(unknown)"].Dropped)
}
