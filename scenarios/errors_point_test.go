package scenarios

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValueErrorsPointAtTheValue holds a bad limit, in the base policy or
// a variant's set, to file:line:column of the value itself, and names a
// variant's set only when the variant has one.
func TestValueErrorsPointAtTheValue(t *testing.T) {
	withVariants := minimal + "variants:\n  - name: plain\n  - name: v\n    set:\n      channels: [{name: move, burst: 40}]\n"
	for _, c := range []struct {
		name, doc, from, to string
		want                []string
	}{
		{"negative rate", minimal, "      rate: 30", "      rate: -30", []string{"t.yaml:10:13: policy.channels[0].rate: -30 must be greater than 0"}},
		{"infinite rate", minimal, "      rate: 30", "      rate: .inf", []string{"t.yaml:10:13: policy.channels[0].rate: +Inf must be finite"}},
		{"NaN rate", minimal, "      rate: 30", "      rate: .nan", []string{"t.yaml:10:13: policy.channels[0].rate: NaN must be finite"}},
		{"huge burst", minimal, "      rate: 30", "      rate: 30\n      burst: 1e30", []string{"t.yaml:11:14: policy.channels[0].burst: 1e+30 must be at most"}},
		// The first variant has no set: the base's error is the base's.
		{"base error, variant without a set", withVariants, "      rate: 30", "      rate: -30", []string{"t.yaml:10:13: policy.channels[0].rate: -30 must be greater than 0"}},
		{"in a set", withVariants, "burst: 40}]", "burst: 1e30}]", []string{"t.yaml:22:38: variants[1].set.channels[0].burst: 1e+30 must be at most"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(c.doc, c.from, c.to, 1)
			require.NotEqual(t, c.doc, doc)
			s, err := Parse([]byte(doc), "t.yaml")
			if err == nil {
				_, err = s.Policies()
			}
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), `with the set of policy variant "plain"`)
		})
	}
}

// TestATabIsReportedOnItsOwnLine holds a YAML syntax error to the line and
// column of the character at fault: yaml.v3 names the line before a tab
// that breaks indentation.
func TestATabIsReportedOnItsOwnLine(t *testing.T) {
	doc := strings.Replace(minimal, "    count: 3", "\tcount: 3", 1)
	_, err := Parse([]byte(doc), "t.yaml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "t.yaml:14:1: found a tab character that violates indentation")
	assert.NotContains(t, err.Error(), "yaml: line")
}
