package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/loadgen/wire"
)

// decodeWhole takes exactly one frame: a message of a kind that carries
// none (ok false) is malformed whatever its bytes, even one whole valid
// frame, and leaves nothing of an earlier decode in m but the size the
// gate charges; so are two frames, part of one, and one over maxFrame.
func TestDecodeWhole(t *testing.T) {
	ping := wire.AppendPing(nil, 42)
	input, err := wire.AppendInput(nil, 3, make([]byte, 10))
	require.NoError(t, err)
	big, err := wire.AppendInput(nil, 3, make([]byte, 200))
	require.NoError(t, err)

	var m wire.Msg
	require.NoError(t, decodeWhole(input, true, 100, &m))
	assert.Equal(t, wire.TypeInput, m.Type)
	assert.Equal(t, len(input), m.Size)

	t.Run("no frame", func(t *testing.T) {
		// m still holds the input decoded above.
		err := decodeWhole(ping, false, 100, &m)
		require.ErrorIs(t, err, wire.ErrMalformed)
		assert.Equal(t, wire.Msg{Size: len(ping)}, m, "zero but the size charged")
		require.ErrorIs(t, decodeWhole(nil, false, 100, &m), wire.ErrMalformed)
		assert.Equal(t, wire.Msg{}, m)
	})
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"two frames", append(append([]byte(nil), ping...), input...)},
		{"part of one", input[:len(input)-1]},
		{"over maxFrame", big},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m wire.Msg
			require.ErrorIs(t, decodeWhole(tc.b, true, 100, &m), wire.ErrMalformed)
			assert.Equal(t, len(tc.b), m.Size)
		})
	}
}
