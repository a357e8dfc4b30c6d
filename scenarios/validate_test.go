package scenarios

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What validates must mean what was written: each of these is refused,
// naming the field, rather than run to measure nothing.
func TestValidateRefusesWhatCannotMeanWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.yaml"), nil, 0o644))
	const pops = "populations:\n  - {name: honest, behaviour: honest, count: 2}\n"
	game, err := filepath.Abs("policies/game.yaml")
	require.NoError(t, err)
	withGame := "name: t\nduration: 2s\npolicy_file: " + game + "\n"
	cases := []struct{ name, doc, want string }{
		{"empty inline policy", "name: t\nduration: 2s\npolicy:\n" + pops, "policy: is empty"},
		{"empty policy file", "name: t\nduration: 2s\npolicy_file: empty.yaml\n" + pops, "empty.yaml is empty"},
		{"misspelt kind", withGame + pops + "thresholds:\n  - honest.chta.drop_rate < 1%\n", `no message kind named "chta" (did you mean "chat"?)`},
		{"kind on a client metric", withGame + pops + "thresholds:\n  - honest.move.lockouts == 0\n", "lockouts counts clients"},
		{"population named all", withGame + "populations:\n  - {name: all, behaviour: honest, count: 2}\n", `"all" cannot be named in a threshold`},
		{"population with a comparison", withGame + "populations:\n  - {name: eu<1, behaviour: honest, count: 2}\n", `"eu<1" cannot be named in a threshold`},
		{"population with a dot", withGame + "populations:\n  - {name: eu.west, behaviour: honest, count: 2}\n", `"eu.west" cannot be named in a threshold`},
		{"fractional count", withGame + "populations:\n  - {name: honest, behaviour: honest, count: 2.5}\n", `2.5 is not a valid integer`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc), filepath.Join(dir, "s.yaml"))
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
}

// What the harness would refuse at run time is refused by Check, naming
// the variant: a policy with no channel (policy: {}), and a channel named
// as one of the server's stats rows.
func TestCheckRefusesPoliciesTheHarnessCannotRun(t *testing.T) {
	const pops = "populations:\n  - {name: honest, behaviour: honest, count: 2}\n"
	for _, c := range []struct{ name, doc, want string }{
		{"no channel", "name: t\nduration: 2s\npolicy: {}\n" + pops, "the policy has no channels"},
		{"reserved channel name", "name: t\nduration: 2s\npolicy:\n  channels:\n    - {name: move, class: input}\nvariants:\n  - name: base\n  - name: odd\n    set:\n      channels:\n        - {name: (ping), class: input}\n" + pops, `variant "odd"`},
	} {
		s, err := Parse([]byte(c.doc), "s.yaml")
		require.NoError(t, err, c.name)
		_, err = s.Check(Options{})
		if assert.Error(t, err, c.name) {
			assert.Contains(t, err.Error(), c.want, c.name)
		}
	}
}
