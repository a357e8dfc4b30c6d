// Package valuekind words the error of a scalar that does not fit the Go
// value it is decoded into, one way for the policies of package core and
// the scenario files of package scenarios alike ("-1 is not a valid
// integer of 0 or more"). Its functions are pure and safe for concurrent
// use.
package valuekind

import (
	"fmt"
	"math/big"
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
// does not fit a value of type t. A whole number beyond t's range says so
// and gives the range ("5000000000 is out of range (an integer from 0 to
// 4294967295)"), except a negative one for an unsigned t, which reads like
// any other misfit ("-1 is not a valid integer of 0 or more").
func NotValid(shown string, t reflect.Type) string {
	if Integer(t.Kind()) {
		lo, hi := intRange(t)
		if v, ok := new(big.Int).SetString(shown, 0); ok && (v.Cmp(hi) > 0 || lo.Sign() < 0 && v.Cmp(lo) < 0) {
			return fmt.Sprintf("%s is out of range (an integer from %s to %s)", shown, lo, hi)
		}
	}
	return fmt.Sprintf("%s is not a valid %s", shown, Word(t))
}

// intRange returns the least and the greatest value of the integer type t.
func intRange(t reflect.Type) (lo, hi *big.Int) {
	bits := uint(t.Bits())
	one := big.NewInt(1)
	if k := t.Kind(); reflect.Int <= k && k <= reflect.Int64 {
		hi = new(big.Int).Lsh(one, bits-1)
		lo = new(big.Int).Neg(hi)
		return lo, hi.Sub(hi, one)
	}
	hi = new(big.Int).Lsh(one, bits)
	return new(big.Int), hi.Sub(hi, one)
}
