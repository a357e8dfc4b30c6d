package drive

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A dribble writes its frame n bytes at a time to its end, then starts the
// frame it is offered next; a new connection starts it afresh.
func TestDribblePiece(t *testing.T) {
	var cs clientState
	var got []string
	for _, f := range []string{"abcde", "abcde", "abcde", "vwxyz", "vwxyz"} {
		got = append(got, string(cs.dribblePiece([]byte(f), 2)))
	}
	assert.Equal(t, []string{"ab", "cd", "e", "vw", "xy"}, got)
	cs.dribbleOff = 0 // as connect does
	assert.Equal(t, "12", string(cs.dribblePiece([]byte("123"), 2)))
	assert.Equal(t, "3", string(cs.dribblePiece([]byte("zzz"), 5)), "the frame under way, not the one offered")
	assert.Empty(t, cs.dribblePiece(nil, 2))
}
