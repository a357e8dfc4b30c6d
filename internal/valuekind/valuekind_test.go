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
	if !integer(reflect.Uint8) || !integer(reflect.Int) || integer(reflect.Float64) {
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

// Decode refuses a fraction for an integer and a value of the wrong kind
// with NotValid's words, and decodes what fits.
func TestDecode(t *testing.T) {
	node := func(src string) *yaml.Node {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte("a: "+src), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Content[0].Content[1]
	}
	var n uint32
	if err := Decode(node("2.5"), &n); err == nil || err.Error() != "2.5 is not a valid integer of 0 or more" {
		t.Errorf("2.5 into a uint32: %v", err)
	}
	if err := Decode(node("maybe"), new(bool)); err == nil || err.Error() != `"maybe" is not a valid boolean (true or false)` {
		t.Errorf("maybe into a bool: %v", err)
	}
	if err := Decode(node("-0x10"), new(int8)); err != nil {
		t.Errorf("-0x10 into an int8: %v", err)
	}
	if err := Decode(node("0x100"), new(int8)); err == nil || err.Error() != "0x100 is out of range (an integer from -128 to 127)" {
		t.Errorf("0x100 into an int8: %v", err)
	}
	if err := Decode(node("42"), &n); err != nil || n != 42 {
		t.Errorf("42 into a uint32: %d, %v", n, err)
	}
}
