package scenarios

import (
	"encoding"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/internal/suggest"
	"github.com/sluicedev/sluice/internal/valuekind"
)

// FieldError is a problem at one place of a YAML file: the file, the line
// and column, the field path from the document root (for example
// populations[1].arrival.kind), what is wrong, and a suggestion when a key
// looks misspelt.
type FieldError struct {
	File       string
	Line, Col  int
	Path       string
	Msg        string
	Suggestion string
}

func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Col > 0 {
		fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Col)
	} else {
		fmt.Fprintf(&b, "%d: ", e.Line) // a column not known
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	b.WriteString(suggest.Hint(e.Suggestion))
	return b.String()
}

var durationType = reflect.TypeOf(time.Duration(0))

// checkNode walks a YAML node against the Go type it will be decoded into
// and reports the first unknown key, wrong type or malformed scalar, with
// its position. yaml.v3's own KnownFields errors carry a line but no column,
// no path and no suggestion; this walk carries all three.
func checkNode(n *yaml.Node, t reflect.Type, path string) *FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return checkNode(n.Content[0], t, path)
	}
	if n.Kind == yaml.AliasNode {
		return checkNode(n.Alias, t, path)
	}
	if t == reflect.TypeOf(yaml.Node{}) || reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()) {
		// Custom decoders validate themselves when decoded.
		if t != durationType {
			return nil
		}
	}
	if isNull(n) {
		return nil
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return errAt(n, path, "want a duration such as 250ms or 20s")
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return errAt(n, path, fmt.Sprintf("%q is not a duration (use a unit: 250ms, 20s, 1m)", n.Value))
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return errAt(n, path, "want a mapping of fields")
		}
		fields := yamlFields(t)
		if e := repeatedKey(n, path); e != nil {
			return e
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				return errAt(k, join(path, k.Value), "merge keys (<<) are not supported: write the fields out")
			}
			f, ok := fields[k.Value]
			if !ok {
				e := errAt(k, join(path, k.Value), "unknown field")
				e.Suggestion = suggest.Closest(k.Value, slices.Sorted(maps.Keys(fields)))
				return e
			}
			if e := checkNode(v, f.Type, join(path, k.Value)); e != nil {
				return e
			}
		}
		return nil
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return errAt(n, path, "want a list")
		}
		if e := repeatedName(n, path); e != nil {
			return e
		}
		for i, c := range n.Content {
			if e := checkNode(c, t.Elem(), index(path, i)); e != nil {
				return e
			}
		}
		return nil
	case t.Kind() == reflect.Interface:
		return nil
	default:
		text := reflect.PointerTo(t).Implements(textUnmarshaler)
		if n.Kind != yaml.ScalarNode {
			if text { // a message kind
				return errAt(n, path, "want a single value, not a list or a mapping")
			}
			return errAt(n, path, fmt.Sprintf("want a single %s, not a list or a mapping", valuekind.Word(t)))
		}
		if text {
			return checkText(n, t, path)
		}
		if err := valuekind.Decode(n, reflect.New(t).Interface()); err != nil {
			return errAt(n, path, err.Error())
		}
		return nil
	}
}

// repeatedKey reports the second occurrence of a key in mapping n, with
// its column and path (yaml.v3 refuses it too, but with a line alone).
func repeatedKey(n *yaml.Node, path string) *FieldError {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if seen[k.Value] {
			return errAt(k, join(path, k.Value), "repeated key")
		}
		seen[k.Value] = true
	}
	return nil
}

// repeatedName reports the second item of list n with a name already used
// (channels, populations, variants): a variant's set merges named items
// by name, and would fold two of them.
func repeatedName(n *yaml.Node, path string) *FieldError {
	seen := map[string]bool{}
	for i, item := range n.Content {
		name := itemNameNode(item)
		if name == nil || name.Value == "" {
			continue
		}
		if seen[name.Value] {
			return errAt(name, fmt.Sprintf("%s[%d].name", path, i), fmt.Sprintf("%q is used twice", name.Value))
		}
		seen[name.Value] = true
	}
	return nil
}

// repeatedNames is repeatedName for every list under the mapping n: every
// list, as mergeNode merges any list of named items by name (today a
// policy has one, its channels).
func repeatedNames(n *yaml.Node, path string) *FieldError {
	switch n = unalias(n); n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if fe := repeatedNames(n.Content[i+1], join(path, n.Content[i].Value)); fe != nil {
				return fe
			}
		}
	case yaml.SequenceNode:
		if fe := repeatedName(n, path); fe != nil {
			return fe
		}
		for i, c := range n.Content {
			if fe := repeatedNames(c, index(path, i)); fe != nil {
				return fe
			}
		}
	}
	return nil
}

// policyFieldError is core's *PolicyError as a FieldError in file, its
// path under prefix; any other error gets the file's name in front.
func policyFieldError(err error, file, prefix string) error {
	var pe *core.PolicyError
	if !errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", file, err)
	}
	return fieldErrorOf(pe, file, join(prefix, pe.Path))
}

// fieldErrorOf is pe as a FieldError in file at path.
func fieldErrorOf(pe *core.PolicyError, file, path string) *FieldError {
	return &FieldError{File: file, Line: pe.Line, Col: pe.Col, Path: path, Msg: pe.Msg, Suggestion: pe.Suggestion}
}

// checkPolicy checks a policy node (inline, a policy file's, or a
// variant's set, which may be partial) as core decodes it, and reports
// the first problem as a FieldError in file, its path under prefix. A
// named item written twice is refused too: core refuses it in a whole
// policy, but in a set the merge would fold it first.
func checkPolicy(n *yaml.Node, file, prefix string) error {
	if err := core.CheckPolicyNode(n); err != nil {
		return policyFieldError(err, file, prefix)
	}
	if fe := repeatedNames(n, prefix); fe != nil {
		fe.File = file
		return fe
	}
	return nil
}

var textUnmarshaler = reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()

// checkText decodes the scalar n into t, a type that reads itself from
// text (a behave.Kind), reporting its own error at the node.
func checkText(n *yaml.Node, t reflect.Type, path string) *FieldError {
	v := reflect.New(t).Interface().(encoding.TextUnmarshaler)
	if err := v.UnmarshalText([]byte(n.Value)); err != nil {
		return errAt(n, path, err.Error())
	}
	return nil
}

func errAt(n *yaml.Node, path, msg string) *FieldError {
	return &FieldError{Line: n.Line, Col: n.Column, Path: path, Msg: msg}
}

// index returns the path of item i of the list at path ("a.b[2]").
func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func join(path, key string) string {
	switch {
	case path == "":
		return key
	case key == "":
		return path
	}
	return path + "." + key
}

// yamlFields maps each YAML key of struct t to its field, following inline
// embedded structs.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range yamlFields(ft) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

// didYouMean is the hint that ends a message about name: the closest of
// known in suggest.Hint's words, or "" when none is close.
func didYouMean(name string, known []string) string {
	return suggest.Hint(suggest.Closest(name, known))
}
