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
	for _, c := range []struct {
		shown string
		v     any
		want  string
	}{
		{"-1", uint32(0), "-1 is not a valid integer of 0 or more"},
		{"5000000000", uint32(0), "5000000000 is out of range (an integer from 0 to 4294967295)"},
		{"18446744073709551616", uint64(0), "18446744073709551616 is out of range (an integer from 0 to 18446744073709551615)"},
		{"-129", int8(0), "-129 is out of range (an integer from -128 to 127)"},
		{"128", int8(0), "128 is out of range (an integer from -128 to 127)"},
		{"2.5", int8(0), "2.5 is not a valid integer"},
		{`"5000000000"`, uint32(0), `"5000000000" is not a valid integer of 0 or more`},
	} {
		if got := NotValid(c.shown, reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("NotValid(%s, %T) = %q, want %q", c.shown, c.v, got, c.want)
		}
	}
}
