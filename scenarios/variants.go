package scenarios

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluicedev/sluice/core"

	"gopkg.in/yaml.v3"
)

// mergeNode returns base with over laid on top: mappings merge key by key,
// lists whose items are all mappings with a name merge item by item (an item
// with a new name is appended), a null ("key:" with nothing after it)
// changes nothing, at any depth, and anything else replaces. Neither input
// is modified. Aliases are followed: a value the base writes as *anchor
// merges like the value it names.
func mergeNode(base, over *yaml.Node) *yaml.Node {
	base, over = unalias(base), unalias(over)
	if over == nil || over.Kind == 0 || isNull(over) {
		return cloneNode(base)
	}
	if base == nil || base.Kind == 0 || base.Kind != over.Kind {
		return cloneNode(over)
	}
	switch base.Kind {
	case yaml.MappingNode:
		out := cloneNode(base)
		for i := 0; i+1 < len(over.Content); i += 2 {
			k, v := over.Content[i], over.Content[i+1]
			found := false
			for j := 0; j+1 < len(out.Content); j += 2 {
				if out.Content[j].Value == k.Value {
					out.Content[j+1] = mergeNode(out.Content[j+1], v)
					found = true
					break
				}
			}
			if !found {
				out.Content = append(out.Content, cloneNode(k), cloneNode(v))
			}
		}
		return out
	case yaml.SequenceNode:
		if !namedItems(base) || !namedItems(over) {
			return cloneNode(over)
		}
		out := cloneNode(base)
		for _, item := range over.Content {
			name := itemName(item)
			found := false
			for j, cur := range out.Content {
				if itemName(cur) == name {
					out.Content[j] = mergeNode(cur, item)
					found = true
					break
				}
			}
			if !found {
				out.Content = append(out.Content, cloneNode(item))
			}
		}
		return out
	}
	return cloneNode(over)
}

func namedItems(n *yaml.Node) bool {
	for _, c := range n.Content {
		if itemName(c) == "" {
			return false
		}
	}
	return true
}

// unalias follows n's aliases to the node they name.
func unalias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func itemName(n *yaml.Node) string {
	if v := itemNameNode(n); v != nil {
		return v.Value
	}
	return ""
}

// itemNameNode returns the value node of a mapping's name key, or nil.
func itemNameNode(n *yaml.Node) *yaml.Node { return mappingValue(n, "name") }

func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = cloneNode(ch)
	}
	return &c
}

// VariantNode is a named policy variant as a YAML node: the base policy with
// the variant's Set merged over it.
type VariantNode struct {
	Name        string
	Description string
	ExpectFail  bool
	Node        *yaml.Node
}

// variantNodes returns the variants to run: "base" alone when the scenario
// names none, else each named variant.
func (s *Scenario) variantNodes() []VariantNode {
	if len(s.Variants) == 0 {
		return []VariantNode{{Name: "base", Node: cloneNode(&s.Policy)}}
	}
	out := make([]VariantNode, 0, len(s.Variants))
	for _, v := range s.Variants {
		out = append(out, VariantNode{Name: v.Name, Description: v.Description, ExpectFail: v.Expect == "fail", Node: mergeNode(&s.Policy, &v.Set)})
	}
	return out
}

// ErrNoVariant is wrapped by the *OptionError for a policy NAME the
// scenario does not define.
var ErrNoVariant = errors.New("scenarios: no policy variant")

// noVariant is the error for --policy NAME when no variant of have has it.
func noVariant(name string, have []NamedPolicy) error {
	names := []string{}
	for _, v := range have {
		names = append(names, v.Name)
	}
	return &OptionError{Option: "policy", Msg: fmt.Sprintf("no policy variant %q (have %v)", name, names), err: ErrNoVariant}
}

// NamedPolicy is one policy variant, decoded and validated.
type NamedPolicy struct {
	Name        string
	Description string
	// ExpectFail marks a variant expected to fail its thresholds.
	ExpectFail bool
	Policy     core.Policy
}

// Policies decodes and validates every variant (or the base policy alone
// when there are none). An error is a *FieldError in the file the field
// is written in, at its line, with its path there (see policyError).
func (s *Scenario) Policies() ([]NamedPolicy, error) {
	var out []NamedPolicy
	for i, v := range s.variantNodes() {
		p, err := core.DecodePolicyNode(v.Node)
		if err != nil {
			return nil, s.policyError(i, v, err)
		}
		out = append(out, NamedPolicy{Name: v.Name, Description: v.Description, ExpectFail: v.ExpectFail, Policy: p})
	}
	return out, nil
}

// policyError places core's error on variant v (the i-th) in the file
// that writes the field, with the path there: a field the variant's set
// writes is the scenario file's, under variants[i].set (its own index
// for a list item it names); any other is the base policy's, in
// policy_file or under the scenario's policy, and says which variant's
// set it was checked with. Lines alone cannot tell the files apart: they
// number their lines apart.
func (s *Scenario) policyError(i int, v VariantNode, err error) error {
	// Core joins every problem it finds; each is placed on its own (a
	// *PolicyError unwraps to its causes, so it is matched first).
	switch e := err.(type) {
	case *core.PolicyError:
	case interface{ Unwrap() []error }:
		var placed []error
		for _, one := range e.Unwrap() {
			placed = append(placed, s.policyError(i, v, one))
		}
		return errors.Join(placed...)
	}
	var pe *core.PolicyError
	if !errors.As(err, &pe) {
		return fmt.Errorf("%s: policy variant %q: %w", s.File, v.Name, err)
	}
	if len(s.Variants) > 0 && pe.Line > 0 {
		if sp, ok := setPath(v.Node, &s.Policy, &s.Variants[i].Set, pe.Path, pe.Line); ok {
			return fieldErrorOf(pe, s.File, join(fmt.Sprintf("variants[%d].set", i), sp))
		}
	}
	file, prefix := s.File, "policy"
	if s.PolicyFile != "" {
		file, prefix = s.PolicyFile, ""
	}
	fe := fieldErrorOf(pe, file, join(prefix, pe.Path))
	if len(s.Variants) > 0 {
		fe.Msg += fmt.Sprintf(" (with the set of policy variant %q)", v.Name)
	}
	return fe
}

// setPath reports whether set, merged over base into the policy merged,
// writes the node that merged holds at path (a core.PolicyError path: keys
// joined by dots, list indices in brackets), on line, and returns that
// node's path in the set: a list item the set names is merged by name, so
// its index there may differ.
func setPath(merged, base, set *yaml.Node, path string, line int) (string, bool) {
	m, b, s := unalias(merged), unalias(base), set
	var sp string
	for n, step := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(step, "[")
		sp = join(sp, key)
		mv := mappingValue(m, key)
		if mv == nil {
			// A defaulted field: core gives it its parent's line, and the
			// parent is the set's only where the base has none (merged
			// holds the base's otherwise): a line alone could be either
			// file's.
			return sp, n > 0 && (b == nil || b.Kind != m.Kind) && writesOn(s, line)
		}
		// A null writes nothing (mergeNode keeps the base's node).
		if s = rawValue(s, key); s == nil || isNull(unalias(s)) {
			return "", false
		}
		m, b = mv, mappingValue(b, key)
		for rest != "" {
			var at string
			at, rest, _ = strings.Cut(rest, "]")
			rest = strings.TrimPrefix(rest, "[")
			i, err := strconv.Atoi(at)
			if err != nil || m.Kind != yaml.SequenceNode || unalias(s).Kind != yaml.SequenceNode || i < 0 || i >= len(m.Content) {
				return "", false
			}
			if m = unalias(m.Content[i]); m == nil {
				return "", false
			}
			b = baseItem(b, unalias(s), m)
			var j int
			if s, j = setItem(unalias(s), m, i); s == nil {
				return "", false
			}
			sp += fmt.Sprintf("[%d]", j)
		}
	}
	return sp, writesOn(s, line)
}

// writesOn reports whether the set's node s is on line. A value the set
// writes as an alias is reported at the alias's line when the alias itself
// is the merged node (a key or item the base lacks), and at its anchor's
// when the merge resolved it over the base's value: either is the set's.
func writesOn(s *yaml.Node, line int) bool { return s.Line == line || unalias(s).Line == line }

// rawValue is mappingValue without following the value's alias.
func rawValue(n *yaml.Node, key string) *yaml.Node {
	if n = unalias(n); n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// setItem is the item of the set's list s that the merged list holds as
// m, at index i, and its index in s: the one with m's name when the set
// names its items (mergeNode merges those by name), else the set's item i
// (the set's list replaced the base's whole). nil if the set wrote no
// such item.
func setItem(s, m *yaml.Node, i int) (*yaml.Node, int) {
	if name := itemName(m); name != "" && namedItems(s) {
		for j, c := range s.Content {
			if itemName(c) == name {
				return c, j
			}
		}
		return nil, 0
	}
	if i < len(s.Content) {
		return s.Content[i], i
	}
	return nil, 0
}

// baseItem is the item of the base's list b that the merged list holds as
// m: the one with m's name when both lists name their items (mergeNode
// merged them by name); nil when the set's list replaced the base's whole,
// or b has no such item.
func baseItem(b, setList, m *yaml.Node) *yaml.Node {
	name := itemName(m)
	if b == nil || b.Kind != yaml.SequenceNode || name == "" || !namedItems(b) || !namedItems(setList) {
		return nil
	}
	for _, c := range b.Content {
		if itemName(c) == name {
			return unalias(c)
		}
	}
	return nil
}

// mappingValue returns the value of key in the mapping n, aliases
// followed; nil if n is not a mapping or has no such key.
func mappingValue(n *yaml.Node, key string) *yaml.Node { return unalias(rawValue(n, key)) }
