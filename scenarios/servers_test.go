package scenarios

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// servers: and redis: are checked where they are written, by name.
func TestServersFieldErrorsNameTheField(t *testing.T) {
	withVariants := strings.Replace(minimal, "populations:", "variants:\n  - name: a\n  - name: b\n    servers: VS\npopulations:", 1)
	for _, c := range []struct {
		name, doc, want string
	}{
		{"negative", strings.Replace(minimal, "driver: sim\n", "driver: sim\nservers: -1\n", 1), "t.yaml:6:10: servers: must be between 1 and 254 (game servers)"},
		{"too many", strings.Replace(minimal, "driver: sim\n", "driver: sim\nservers: 255\n", 1), "t.yaml:6:10: servers: must be between 1 and 254"},
		{"variant", strings.Replace(withVariants, "VS", "300", 1), "variants[1].servers: must be between 1 and 254"},
		{"redis value", strings.Replace(minimal, "driver: sim\n", "driver: sim\nservers: 2\nredis: here\n", 1), `redis: "here" is not start`},
		{"redis, one server", strings.Replace(minimal, "driver: sim\n", "driver: sim\nredis: start\n", 1), "redis: is for a scenario of several servers"},
		{"target", strings.Replace(minimal, "driver: sim\n", "target: 127.0.0.1:7000\nservers: 2\n", 1), "servers: are started by the run"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), "t.yaml")
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// A variant's servers: overrides the scenario's; neither means one.
func TestServersOfAVariant(t *testing.T) {
	doc := strings.Replace(minimal, "populations:", "variants:\n  - name: a\n  - name: b\n    servers: 3\npopulations:", 1)
	s, err := Parse([]byte(strings.Replace(doc, "driver: sim\n", "driver: sim\nservers: 2\n", 1)), "t.yaml")
	require.NoError(t, err)
	vs, err := s.Policies()
	require.NoError(t, err)
	assert.Equal(t, 2, vs[0].Servers)
	assert.Equal(t, 3, vs[1].Servers)
	s, err = Parse([]byte(minimal), "t.yaml")
	require.NoError(t, err)
	vs, err = s.Policies()
	require.NoError(t, err)
	assert.Equal(t, 1, vs[0].Servers)
}
