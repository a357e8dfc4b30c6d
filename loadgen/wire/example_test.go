package wire_test

import (
	"fmt"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// A client packs several frames into one write; the server walks them in
// one buffer without allocating.
func Example() {
	buf := make([]byte, 0, 256)
	buf, _ = wire.AppendHello(buf, []byte("acct-1"), []byte("honest"))
	buf, _ = wire.AppendInput(buf, 1, []byte{0, 3, 0, 4})
	buf, _ = wire.AppendRequest(buf, 2, 7, []byte("sword"))
	buf = wire.AppendPing(buf, 1000)

	d := wire.Decoder{Max: wire.DefaultMaxFrame}
	d.Reset(buf)
	var m wire.Msg
	for d.Next(&m) == nil {
		switch m.Type {
		case wire.TypeHello:
			fmt.Printf("%v v%d token=%s label=%s\n", m.Type, m.Version, m.Token, m.Label)
		case wire.TypeInput:
			fmt.Printf("%v channel=%d payload=%v\n", m.Type, m.Kind, m.Payload)
		case wire.TypeRequest:
			fmt.Printf("%v kind=%d id=%d payload=%s\n", m.Type, m.Kind, m.ID, m.Payload)
		default:
			fmt.Printf("%v ts=%d (%d bytes)\n", m.Type, m.Timestamp, m.Size)
		}
	}
	// Output:
	// Hello v1 token=acct-1 label=honest
	// Input channel=1 payload=[0 3 0 4]
	// Request kind=2 id=7 payload=sword
	// Ping ts=1000 (13 bytes)
}
