package drive

import (
	"testing"

	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Clients start on their assignment (index mod servers); behave.ServerNext moves
// a client on, behave.ServerIndex names one, a server the run lacks is an error.
func TestServerRoute(t *testing.T) {
	r := NewServerRoute(3, []behave.Client{{Index: 0}, {Index: 4}})
	pick := func(c int32, choice uint8) int {
		i, err := r.Pick(c, choice)
		require.NoError(t, err)
		return i
	}
	assert.Equal(t, 0, pick(0, behave.ServerAssigned))
	assert.Equal(t, 1, pick(1, behave.ServerAssigned))
	assert.Equal(t, 2, pick(1, behave.ServerNext))
	assert.Equal(t, 0, pick(1, behave.ServerNext))
	assert.Equal(t, 0, pick(1, behave.ServerAssigned), "assigned is where the client is now")
	assert.Equal(t, 2, pick(0, behave.ServerIndex(2)))
	_, err := r.Pick(0, behave.ServerIndex(3))
	require.ErrorContains(t, err, "server 3 named, and the run has 3")
}
