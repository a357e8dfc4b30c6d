package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A bad --listen, --tick or --max-conns value is a usage error (exit 2)
// naming the flag and the value, not the server's Go config field.
func TestServeBadFlagValuesAreUsageErrors(t *testing.T) {
	policy := scenarioDir + "policies/game.yaml"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "nonsense"}, "--listen nonsense: address nonsense: missing port in address"},
		{[]string{"--listen", "127.0.0.1:99999"}, "--listen 127.0.0.1:99999: address 99999: invalid port"},
		{[]string{"--tick", "-5"}, "--tick -5: -5 Hz not in (0, 10000]"},
		{[]string{"--tick", "NaN"}, "--tick NaN: NaN Hz not in (0, 10000]"},
		{[]string{"--max-conns", "-1"}, "--max-conns -1: -1 is negative"},
		{[]string{"--ws", "0.0.0.0:0"}, "--ws 0.0.0.0:0: sluice serve listens on loopback addresses only"},
		{[]string{"--ws", "nonsense"}, "--ws nonsense: address nonsense: missing port in address"},
		{[]string{"--udp", "0.0.0.0:0"}, "--udp 0.0.0.0:0: sluice serve listens on loopback addresses only"},
		{[]string{"--udp", "nonsense"}, "--udp nonsense: address nonsense: missing port in address"},
	} {
		code, out, errOut := runCLI(t, append([]string{"serve", "--policy", policy}, c.args...)...)
		assert.Equal(t, exitUsage, code, out+errOut)
		assert.Contains(t, errOut, c.want)
		assert.Contains(t, errOut, "run 'sluice serve --help' for usage")
		for _, field := range []string{"Addr", "TickRate", "MaxConns", "config:"} {
			assert.NotContains(t, errOut, field)
		}
	}
}

// serve takes its policy from a policy file or from a scenario's variant,
// never both, and says which variants there are when it needs one named.
func TestServeScenarioVariantFlags(t *testing.T) {
	policy, scenario := scenarioDir+"policies/game.yaml", scenarioDir+"quickstart.yaml"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", policy, "--scenario", scenario}, "--policy and --scenario: give one"},
		{[]string{"--policy", policy, "--variant", "tight"}, "--variant names a variant of --scenario FILE"},
		{[]string{"--scenario", scenario}, "has 2 policy variants: name one with --variant (balanced, tight)"},
		{[]string{"--scenario", scenario, "--variant", "loose"}, `--variant "loose": ` + scenario + " has no such policy variant (have balanced, tight)"},
	} {
		code, out, errOut := runCLI(t, append([]string{"serve"}, c.args...)...)
		assert.Equal(t, exitUsage, code, out+errOut)
		assert.Contains(t, errOut, c.want)
	}
}
