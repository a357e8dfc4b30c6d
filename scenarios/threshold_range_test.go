package scenarios

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThresholdsThatCannotFailOrPassAreRefused holds the scenario reader
// to refusing a threshold whose outcome is fixed before any run: a share
// is between 0% and 100%, every other metric is 0 or more. The error
// points at the threshold and says which way it is fixed.
func TestThresholdsThatCannotFailOrPassAreRefused(t *testing.T) {
	for _, c := range []struct{ th, want string }{
		{"honest.drop_rate < 200%", "drop_rate < 200% can never fail: drop_rate is a share from 0% to 100%"},
		{"honest.drop_rate <= 101%", "can never fail"},
		{"honest.drop_rate < -1%", "drop_rate < -1% can never pass"},
		{"honest.limited_rate > 100%", "can never pass"},
		{"honest.drop_rate == 1.5", "can never pass"},
		{"honest.p99 >= -1s", "p99 >= -1s can never fail: p99 is 0 or more"},
		{"honest.p99 < 0s", "can never pass"},
		{"honest.sent > -3", "sent > -3 can never fail"},
		{"all.drops.TableFull < 0", "can never pass"},
	} {
		doc := strings.Replace(minimal, "  - honest.drop_rate < 0.1%", "  - "+c.th, 1)
		_, err := Parse([]byte(doc), "t.yaml")
		if assert.Error(t, err, c.th) {
			assert.Contains(t, err.Error(), "t.yaml:", c.th)
			assert.Contains(t, err.Error(), "thresholds[0]", c.th)
			assert.Contains(t, err.Error(), c.want, c.th)
		}
	}
	// At the edges, a threshold stands: one that can go either way, and
	// one that takes in the whole range (it records the value).
	for _, th := range []string{"honest.drop_rate <= 100%", "all.drops.Malformed >= 0", "honest.p99 >= 0s", "honest.drop_rate < 100%", "honest.drop_rate <= 0%", "honest.drop_rate > 0", "honest.drop_rate >= 100%",
		"honest.drop_rate == 0", "honest.drop_rate == 100%", "all.drops.TableFull == 0", "honest.p99 > 0s", "honest.sent >= 1"} {
		doc := strings.Replace(minimal, "  - honest.drop_rate < 0.1%", "  - "+th, 1)
		_, err := Parse([]byte(doc), "t.yaml")
		require.NoError(t, err, th)
	}
}
