// Package valuekind words the error of a scalar that does not fit the Go
// value it is decoded into, one way for the policies of package core and
// the scenario files of package scenarios alike ("-1 is not a valid
// integer of 0 or more"). Its functions are pure and safe for concurrent
// use.
package valuekind

import (
	"errors"
	"fmt"
	"math"
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
	case signed(k):
		return "integer"
	case unsigned(k):
		return "integer of 0 or more"
	case k == reflect.Float32 || k == reflect.Float64:
		return "number"
	case k == reflect.String:
		return "string"
	}
	return t.String()
}

// integer reports whether k is a signed or unsigned integer kind.
func integer(k reflect.Kind) bool { return signed(k) || unsigned(k) }

func signed(k reflect.Kind) bool   { return reflect.Int <= k && k <= reflect.Int64 }
func unsigned(k reflect.Kind) bool { return reflect.Uint <= k && k <= reflect.Uintptr }

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
	bits := t.Bits
	switch k := t.Kind(); {
	case signed(k):
		if _, err := strconv.ParseInt(shown, 0, bits()); errors.Is(err, strconv.ErrRange) {
			hi := int64(math.MaxInt64 >> (64 - bits()))
			return fmt.Sprintf("%s is out of range (an integer from %d to %d)", shown, -hi-1, hi)
		}
	case unsigned(k):
		if _, err := strconv.ParseUint(shown, 0, bits()); errors.Is(err, strconv.ErrRange) {
			return fmt.Sprintf("%s is out of range (an integer from 0 to %d)", shown, uint64(math.MaxUint64)>>(64-bits()))
		}
	}
	return fmt.Sprintf("%s is not a valid %s", shown, Word(t))
}

// Decode decodes the scalar n into v, a pointer, and refuses what does not
// fit v's type with the message of NotValid: a value yaml.v3 cannot decode
// into it, and a fraction for an integer, which yaml.v3 would drop (2.5
// clients are not 2). Any other error of the decoder is returned as it is.
func Decode(n *yaml.Node, v any) error {
	t := reflect.TypeOf(v).Elem()
	if n.ShortTag() == "!!float" && integer(t.Kind()) {
		return errors.New(NotValid(Shown(n), t))
	}
	if err := n.Decode(v); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return errors.New(NotValid(Shown(n), t))
		}
		return err
	}
	return nil
}
