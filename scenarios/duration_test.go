package scenarios

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run length is held to the file's own rules, with the windows scaled as
// Run scales them: quickstart runs at 2s and at an hour, but not at 1ms,
// below the interval's 10ms floor once the interval is cut to the run.
func TestCheckDuration(t *testing.T) {
	s, err := Load("quickstart.yaml")
	require.NoError(t, err)
	for _, d := range []time.Duration{0, s.Duration, 2 * time.Second, time.Hour} {
		assert.NoError(t, s.CheckDuration(d), "%v", d)
	}
	err = s.CheckDuration(time.Millisecond)
	var de *DurationError
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Equal(t, "interval", de.Err.Path)
	assert.Equal(t, time.Millisecond, de.Duration)
	assert.Contains(t, err.Error(), "1ms is refused for quickstart.yaml: scaled to that length, its interval must be between 10ms and the duration (the scenario's interval, 1s, is cut to the run's length)")

	// The scaling is Run's: the scenario it checks is the one withOptions
	// makes.
	c, err := s.withOptions(Options{Duration: 2 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, s.Warmup/10, c.Warmup)
	assert.Equal(t, 20*time.Second, s.Duration, "the scenario itself is left as it was")
}
