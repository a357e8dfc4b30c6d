package scenarios

import (
	"context"
	"errors"
	"path/filepath"
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
		assert.NoError(t, s.checkDuration(d), "%v", d)
	}
	err = s.checkDuration(time.Millisecond)
	var de *DurationError
	require.True(t, errors.As(err, &de), "%v", err)
	assert.Equal(t, "interval", de.Err.Path)
	assert.Equal(t, time.Millisecond, de.Duration)
	assert.Contains(t, err.Error(), "1ms is refused for quickstart.yaml: scaled to that length, its interval must be between 10ms and the duration (the scenario's interval, 1s, is cut to the run's length)")

	// Run refuses it as the option's error, before anything runs; a
	// scenario parsed from bytes (no file to read again) is checked alike.
	_, err = Run(context.Background(), s, Options{Duration: time.Millisecond})
	var oe *OptionError
	require.True(t, errors.As(err, &oe), "%v", err)
	assert.Equal(t, "duration", oe.Option)
	assert.True(t, errors.As(err, &de))
	fromBytes, err := Parse([]byte(`name: t
duration: 20s
policy:
  channels:
    - {name: move, class: input, rate: 30}
populations:
  - {name: p, behaviour: tiny-flood, count: 1}
`), "no-such-dir/t.yaml")
	require.NoError(t, err)
	assert.NoError(t, fromBytes.checkDuration(2*time.Second))
	require.True(t, errors.As(fromBytes.checkDuration(time.Millisecond), &de), "refused by the rules, not for a file it cannot read")

	// The scaling is Run's: the scenario it checks is the one withOptions
	// makes.
	c, err := s.withOptions(Options{Duration: 2 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, s.Warmup/10, c.Warmup)
	assert.Equal(t, 20*time.Second, s.Duration, "the scenario itself is left as it was")
}

// The check refuses none of the shipped scenarios at lengths they run at.
func TestShippedScenariosScaleCleanly(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		s, err := Load(f)
		require.NoError(t, err, f)
		for _, d := range []time.Duration{10 * time.Millisecond, time.Second, 2 * time.Second, time.Minute, time.Hour} {
			assert.NoError(t, s.checkDuration(d), "%s at %v", f, d)
		}
	}
}
