package yamlerr

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// TestPlaceFindsTheCharacterYamlStumbledOn holds Place to the line and
// column of the character at fault, whatever line yaml.v3 names: a tab
// that breaks indentation is named on the line before it.
func TestPlaceFindsTheCharacterYamlStumbledOn(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		line, col int
		msg       string
	}{
		{"tab in indentation", "a:\n  b: 1\n  c: 2\n\td: 3\n", 4, 1, "found a tab character that violates indentation"},
		{"tab after spaces", "a:\n  - x: 1\n  \ty: 2\n", 3, 3, "tab character"},
		{"tab starting a token", "a:\n\t- b\n", 2, 1, "found character that cannot start any token"},
		{"reserved character", "a:\n  b: @x\n", 2, 6, "found character that cannot start any token"},
		// Any other error: the reported line, at its first character.
		{"unclosed flow", "a: {b: 1\nc: 2\n", 1, 1, "did not find expected"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n yaml.Node
			err := yaml.Unmarshal([]byte(c.doc), &n)
			require.Error(t, err)
			line, col, msg := Place([]byte(c.doc), err)
			assert.Equal(t, c.line, line, "line of %v", err)
			assert.Equal(t, c.col, col, "column of %v", err)
			assert.Contains(t, msg, c.msg)
			assert.NotContains(t, msg, "yaml: line")
		})
	}
}
