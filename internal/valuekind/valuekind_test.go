package valuekind

import (
	"reflect"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestWordsAndShown(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{true, "boolean (true or false)"}, {int32(0), "integer"}, {uint(0), "integer of 0 or more"},
		{0.5, "number"}, {"", "string"}, {[]int{}, "[]int"},
	} {
		if got := Word(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("Word(%T) = %q, want %q", c.v, got, c.want)
		}
	}
	if !Integer(reflect.Uint8) || !Integer(reflect.Int) || Integer(reflect.Float64) {
		t.Error("Integer")
	}
	for src, want := range map[string]string{"a: maybe": `"maybe"`, "a: -1": "-1", `a: "-1"`: `"-1"`, "a: 2.5": "2.5"} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatal(err)
		}
		if got := Shown(doc.Content[0].Content[1]); got != want {
			t.Errorf("Shown(%s) = %s, want %s", src, got, want)
		}
	}
	if got := NotValid("-1", reflect.TypeOf(uint32(0))); got != "-1 is not a valid integer of 0 or more" {
		t.Errorf("NotValid: %q", got)
	}
}
