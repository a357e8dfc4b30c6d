package server

import "github.com/sluicedev/sluice/loadgen/wire"

// decodeWhole decodes into m a message that must hold exactly one frame of
// at most maxFrame bytes (a WebSocket message, a Data datagram's payload).
// Anything else is wire.ErrMalformed: more or less than one frame, a frame
// too large, or (ok false) a message of a kind that carries no frame,
// which leaves m zero. On an error m.Size is len(b), the size the gate
// charges.
func decodeWhole(b []byte, ok bool, maxFrame int, m *wire.Msg) error {
	var err error
	if !ok {
		*m, err = wire.Msg{}, wire.ErrMalformed
	} else {
		var n int
		n, err = wire.Decode(b, maxFrame, m)
		if err == nil && n != len(b) || err == wire.ErrIncomplete || err == wire.ErrOversize {
			err = wire.ErrMalformed // not exactly one frame
		}
	}
	if err != nil {
		m.Size = len(b)
	}
	return err
}
