package loopback

import (
	"io"
	"net"
	"net/netip"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/internal/wsraw"
)

// How the loopback driver dials a client over WebSocket (Loopback.wsRaw).
const (
	wsDialHonest    uint8 = iota // a gorilla/websocket client: each whole frame written is one message
	wsDialUpgraded               // a plain socket, upgraded: the behaviour writes WebSocket frames itself
	wsDialNoUpgrade              // a plain socket: the behaviour writes the upgrade itself
)

// WSDialModes returns, for each client of a worker, how it is dialled.
func WSDialModes(clients []behave.Client) []uint8 {
	out := make([]uint8, len(clients))
	for i := range clients {
		if raw, up := behave.WSOnly(clients[i].Behaviour); raw {
			out[i] = wsDialNoUpgrade
			if up {
				out[i] = wsDialUpgraded
			}
		}
	}
	return out
}

// dialWS is Dial's connection over WebSocket for client, from src (when
// valid), and the reader of the server's frames when it is not the
// connection itself.
func (l *Loopback) dialWS(client int32, src netip.Addr) (net.Conn, io.Reader, error) {
	server := l.addrOf(client, drive.TransportWS)
	ap, err := netip.ParseAddrPort(server)
	if err != nil {
		return nil, nil, err
	}
	mode := wsDialHonest
	if int(client) < len(l.WSRaw) {
		mode = l.WSRaw[client]
	}
	if mode == wsDialHonest {
		c, err := wsraw.Dial(l.ctx, ap, src, l.timeout)
		return c, nil, err
	}
	d := net.Dialer{Timeout: l.timeout}
	if src.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 0))
	}
	nc, err := d.DialContext(l.ctx, "tcp", server)
	if err != nil {
		return nil, nil, err
	}
	if mode == wsDialUpgraded {
		if err := wsraw.Upgrade(nc, l.timeout); err != nil {
			nc.Close()
			return nil, nil, err
		}
		return nc, wsraw.ServerReader(nc), nil
	}
	return nc, nil, nil
}
