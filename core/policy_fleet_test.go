package core

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fleet section decodes from YAML, with its defaults filled by
// Normalize; a policy without one leaves the fleet off.
func TestFleetPolicyDecode(t *testing.T) {
	p, err := DecodePolicyYAML([]byte(`
account: {rate: 10, burst: 20}
fleet:
  redis: [127.0.0.1:6379]
  layers: [account, match]
  lease: 4
  onFailure: deny
`))
	require.NoError(t, err)
	require.NoError(t, p.Validate())
	n := p.Normalized()
	f := n.Fleet
	assert.True(t, f.Enabled())
	assert.Equal(t, []string{"127.0.0.1:6379"}, f.Redis)
	assert.Equal(t, []string{"account", "match"}, f.Layers)
	assert.Equal(t, uint32(4), *f.Lease)
	assert.Equal(t, "lease", f.Mode)
	assert.Equal(t, "deny", f.OnFailure)
	assert.Equal(t, DefaultFleetRefresh, time.Duration(*f.Refresh))
	assert.Equal(t, DefaultFleetIdle, time.Duration(*f.Idle))
	assert.Equal(t, "sluice", f.Prefix)
	assert.Nil(t, p.Fleet.Refresh, "Normalized leaves the original untouched")

	off, err := DecodePolicyYAML([]byte("account: {rate: 10}\n"))
	require.NoError(t, err)
	o := off.Normalized()
	assert.False(t, o.Fleet.Enabled())
	assert.Equal(t, Fleet{}, o.Fleet, "an absent fleet section stays empty")
}

// Every bad fleet field is reported at its path and line.
func TestFleetPolicyErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, path string }{
		{"fleet: {lease: 3}", "fleet.redis"},
		{"fleet: {redis: [nope]}", "fleet.redis[0]"},
		{"fleet: {redis: ['h:0']}", "fleet.redis[0]"},
		{"fleet: {redis: [h:1], mode: strict}", "fleet.mode"},
		{"fleet: {redis: [h:1], mode: fast}", "fleet.mode"},
		{"fleet: {redis: [h:1], layers: []}", "fleet.layers"},
		{"fleet: {redis: [h:1], layers: [account, account]}", "fleet.layers[1]"},
		{"fleet: {redis: [h:1], layers: [session]}", "fleet.layers[0]"},
		{"match: {disabled: true}\nfleet: {redis: [h:1], layers: [match]}", "fleet.layers[0]"},
		{"fleet: {redis: [h:1], lease: 0}", "fleet.lease"},
		{"fleet: {redis: [h:1], refresh: 0s}", "fleet.refresh"},
		{"fleet: {redis: [h:1], timeout: -1s}", "fleet.timeout"},
		{"fleet: {redis: [h:1], idle: 10ms, refresh: 50ms}", "fleet.idle"},
		{"fleet: {redis: [h:1], onFailure: panic}", "fleet.onFailure"},
		{"fleet: {redis: [h:1], prefix: 'a{b}'}", "fleet.prefix"},
	} {
		p, err := DecodePolicyYAML([]byte(tc.yaml))
		if err == nil {
			err = p.Validate()
		}
		var pe *PolicyError
		require.True(t, errors.As(err, &pe), "%s: %v", tc.yaml, err)
		assert.Equal(t, tc.path, pe.Path, "%s: %v", tc.yaml, err)
		assert.Positive(t, pe.Line, "%s: %v", tc.yaml, err)
	}
	_, err := DecodePolicyYAML([]byte("fleet: {redis: [h:1], leases: 3}"))
	assert.ErrorContains(t, err, "fleet.leases")
}
