package behave

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/internal/fielddoc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParamDocsAreGeneratedFromTheSource holds paramdocs_gen.go to the
// field comments it is generated from: a comment changed without go
// generate ./loadgen/behave fails here.
func TestParamDocsAreGeneratedFromTheSource(t *testing.T) {
	docs, err := fielddoc.Read(".")
	require.NoError(t, err)
	want, err := fielddoc.GoFile("genparamdocs", "behave", "fieldDocs", docs)
	require.NoError(t, err)
	got, err := os.ReadFile("paramdocs_gen.go")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "paramdocs_gen.go is stale: run go generate ./loadgen/behave")
}

// TestEveryBehaviourParamIsListedWithItsDoc holds BehaviourParams to every
// field a scenario can set on each registered behaviour, under its YAML
// name, each documented and with a default, and to no Go field name left
// in a doc where a YAML one is meant.
func TestEveryBehaviourParamIsListedWithItsDoc(t *testing.T) {
	for _, name := range BehaviourNames() {
		params := BehaviourParams(name)
		require.NotEmpty(t, params, name)
		var leaves int
		var count func(reflect.Type)
		count = func(t reflect.Type) {
			for i := range t.NumField() {
				f := t.Field(i)
				if strings.HasSuffix(f.Tag.Get("yaml"), ",inline") {
					count(f.Type)
					continue
				}
				leaves++
				if f.Type.Kind() == reflect.Struct && f.Type != durationType {
					count(f.Type)
				} else if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
					count(f.Type.Elem())
				}
			}
		}
		count(reflect.TypeOf(registry[name]()).Elem())
		assert.Len(t, params, leaves, "%s: every field a file can set", name)
		for _, p := range params {
			assert.Equal(t, strings.ToLower(p.Name), p.Name, "%s: %s is a YAML name", name, p.Name)
			// Items of a list (targets[].kind) are documented by the list.
			if !strings.Contains(p.Name, "[]") {
				assert.NotEmpty(t, p.Doc, "%s.%s has a doc", name, p.Name)
				if p.Type != "mapping" {
					assert.NotEmpty(t, p.Default, "%s.%s: its doc states a default", name, p.Name)
				}
			}
		}
	}
	honest := BehaviourParams("honest")
	assert.Equal(t, Param{Name: "tick_rate", Type: "number", Default: "20", Doc: "movement inputs per second. Default 20. Negative: none."}, honest[1])
	assert.Nil(t, BehaviourParams("nope"))
	hop := BehaviourParams("channel-hop")
	assert.Equal(t, "targets", hop[2].Name)
	assert.Equal(t, "[{kind: move, rate: 20}, {kind: ability, rate: 5}, {kind: chat, rate: 2}, {kind: purchase, rate: 1}]", hop[2].Default)
}
