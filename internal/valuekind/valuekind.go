// Package valuekind words the error of a scalar that does not fit the Go
// value it is decoded into, one way for the policies of package core and
// the scenario files of package scenarios alike ("-1 is not a valid
// integer of 0 or more"). Its functions are pure and safe for concurrent
// use.
package valuekind

import (
	"fmt"
	"reflect"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Word names the kind of value t holds: "integer", "integer of 0 or
// more", "number", "boolean (true or false)", "string"; t's own name for
// any other.
func Word(t reflect.Type) string {
	switch k := t.Kind(); {
	case k == reflect.Bool:
		return "boolean (true or false)"
	case reflect.Int <= k && k <= reflect.Int64:
		return "integer"
	case reflect.Uint <= k && k <= reflect.Uintptr:
		return "integer of 0 or more"
	case k == reflect.Float32 || k == reflect.Float64:
		return "number"
	case k == reflect.String:
		return "string"
	}
	return t.String()
}

// Integer reports whether k is a signed or unsigned integer kind.
func Integer(k reflect.Kind) bool {
	return reflect.Int <= k && k <= reflect.Int64 || reflect.Uint <= k && k <= reflect.Uintptr
}

// Shown is a YAML scalar as written, for an error: a string quoted as
// JSON shows it, anything else bare ("maybe" but -1).
func Shown(n *yaml.Node) string {
	if n.ShortTag() == "!!str" {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// NotValid is the error message for the scalar shown (as written) that
// does not fit a value of type t.
func NotValid(shown string, t reflect.Type) string {
	return fmt.Sprintf("%s is not a valid %s", shown, Word(t))
}
