package scenarios

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInputBeyondTheBoundsIsRefused holds the scenario reader to refusing
// a file, a list or a string beyond its documented bound, with the bound
// in the error and the place of the first item beyond it.
func TestInputBeyondTheBoundsIsRefused(t *testing.T) {
	many := func(n int, line string) string { // line may hold one %d: the index
		var b strings.Builder
		for i := range n {
			if strings.Contains(line, "%d") {
				fmt.Fprintf(&b, line, i)
			} else {
				b.WriteString(line)
			}
		}
		return b.String()
	}
	for _, c := range []struct {
		name, from, to string
		want           []string
	}{
		{"thresholds", "  - honest.move.send_lag_p99 < 50ms\n", many(MaxThresholds, "  - honest.move.send_lag_p99 < 50ms\n"),
			[]string{fmt.Sprintf("t.yaml:%d:5: thresholds[256]: 257 thresholds, more than the 256 a scenario may hold", 16+MaxThresholds)}},
		{"populations", "thresholds:", many(MaxPopulations, "  - {name: h%d, behaviour: honest, count: 1}\n") + "thresholds:",
			[]string{"populations[64]: 65 populations, more than the 64 a scenario may hold"}},
		{"variants", "thresholds:", "variants:\n" + many(MaxVariants+1, "  - name: v%d\n") + "thresholds:",
			[]string{"variants[32]: 33 variants, more than the 32 a scenario may hold"}},
		{"description", "seed: 7", "description: " + strings.Repeat("x", MaxDescriptionBytes+1) + "\nseed: 7",
			[]string{"t.yaml:2:14: description: is 2049 bytes long, more than the 2048 allowed"}},
		{"name", "name: t", "name: " + strings.Repeat("n", MaxNameBytes+1), []string{"t.yaml:1:7: name: is 65 bytes long, more than the 64 allowed"}},
		{"threshold text", "honest.drop_rate < 0.1%", "honest.drop_rate < 0.1" + strings.Repeat("0", MaxThresholdBytes) + "%", []string{"thresholds[0]: is ", "more than the 256 allowed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(minimal, c.from, c.to, 1)
			require.NotEqual(t, minimal, doc)
			_, err := Parse([]byte(doc), "t.yaml")
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	// At the bounds themselves, a scenario stands.
	doc := strings.Replace(minimal, "  - honest.move.send_lag_p99 < 50ms\n", many(MaxThresholds-1, "  - honest.move.send_lag_p99 < 50ms\n"), 1)
	doc = strings.Replace(doc, "seed: 7", "description: "+strings.Repeat("x", MaxDescriptionBytes)+"\nseed: 7", 1)
	_, err := Parse([]byte(doc), "t.yaml")
	require.NoError(t, err)
}

// TestAFileBeyondTheBoundIsRefusedUnread holds Load, and a policy_file, to
// refusing a file over MaxFileBytes with the bound in the error.
func TestAFileBeyondTheBoundIsRefusedUnread(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	pad := "# " + strings.Repeat("x", 78) + "\n"
	require.NoError(t, os.WriteFile(big, []byte(minimal+strings.Repeat(pad, MaxFileBytes/len(pad)+1)), 0o644))
	_, err := Load(big)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrTooBig), "%v", err)
	assert.Contains(t, err.Error(), "big.yaml: the scenario file is larger than 1048576 bytes (1 MiB)")

	pol := filepath.Join(dir, "pol.yaml")
	require.NoError(t, os.WriteFile(pol, []byte("channels:\n  - {name: move, class: input, rate: 30}\n"+strings.Repeat(pad, MaxFileBytes/len(pad)+1)), 0o644))
	scen := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(scen, []byte(strings.Replace(minimal, "policy:\n  channels:\n    - name: move\n      class: input\n      rate: 30\n", "policy_file: pol.yaml\n", 1)), 0o644))
	_, err = Load(scen)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "s.yaml:6:14: policy_file:")
	assert.Contains(t, err.Error(), "the policy file is larger than 1048576 bytes (1 MiB)")
}
