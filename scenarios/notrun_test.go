package scenarios

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/reports"
)

// An interrupted run's results name the variants it never got to, and its
// report says so: policy-compare cancelled as its first variant ends stops
// the second at once and never runs loose.
func TestInterruptedRunNamesVariantsNeverRun(t *testing.T) {
	s, err := Load("policy-compare.yaml")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := Run(ctx, s, Options{Progress: func(_ string, idx, _ int, done, total time.Duration) {
		if idx == 0 && done == total {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, out)
	r := out.Results
	assert.Equal(t, []string{"balanced", "tight", "loose"}, r.Run.PlannedVariants)
	assert.Equal(t, []string{"loose"}, r.NotRun())
	var b bytes.Buffer
	require.NoError(t, reports.WriteHTML(&b, r))
	assert.True(t, strings.Contains(b.String(), "Never ran: loose."), "the report does not name loose as never run")
}
