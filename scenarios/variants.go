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
// with a new name is appended), and anything else replaces. Neither input
// is modified. Aliases are followed: a value the base writes as *anchor
// merges like the value it names.
func mergeNode(base, over *yaml.Node) *yaml.Node {
	base, over = unalias(base), unalias(over)
	if over == nil || over.Kind == 0 {
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
		set := &v.Set
		if set.Kind == yaml.ScalarNode && set.Tag == "!!null" {
			// "set:" with nothing after it changes nothing; merged, the
			// null would replace the whole base policy.
			set = nil
		}
		out = append(out, VariantNode{Name: v.Name, Description: v.Description, ExpectFail: v.Expect == "fail", Node: mergeNode(&s.Policy, set)})
	}
	return out
}

// ErrNoVariant is wrapped by the *OptionError for a policy NAME the
// scenario does not define.
var ErrNoVariant = errors.New("scenarios: no policy variant")

// variantByName finds one variant, for --policy NAME.
func (s *Scenario) variantByName(name string) (VariantNode, error) {
	names := []string{}
	for _, v := range s.variantNodes() {
		if v.Name == name {
			return v, nil
		}
		names = append(names, v.Name)
	}
	return VariantNode{}, &OptionError{Option: "policy", Msg: fmt.Sprintf("no policy variant %q (have %v)", name, names), err: ErrNoVariant}
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
// when there are none). Errors name the file the field is written in, the
// variant and the field path with its line: a base policy from policy_file
// that is invalid on its own is that file's error; a variant's, once the
// base is valid, comes from its set in the scenario file.
func (s *Scenario) Policies() ([]NamedPolicy, error) {
	var out []NamedPolicy
	for i, v := range s.variantNodes() {
		p, err := core.DecodePolicyNode(v.Node)
		if err != nil {
			switch {
			case s.PolicyFile == "":
				return nil, fmt.Errorf("%s: policy variant %q: %w", s.File, v.Name, err)
			case len(s.Variants) == 0:
				return nil, fmt.Errorf("%s: %w", s.PolicyFile, err) // the policy file alone
			}
			// Lines come from the file the field is written in: a field
			// the set writes is the scenario's, the rest the policy
			// file's. (The two files number their lines apart, so the
			// line alone cannot tell.)
			var pe *core.PolicyError
			if errors.As(err, &pe) && pe.Line > 0 && setWrites(v.Node, &s.Variants[i].Set, pe.Path, pe.Line) {
				return nil, fmt.Errorf("%s: policy variant %q (its set, over %s): %w", s.File, v.Name, s.PolicyFile, err)
			}
			return nil, fmt.Errorf("%s: policy variant %q (with the set in %s): %w", s.PolicyFile, v.Name, s.File, err)
		}
		out = append(out, NamedPolicy{Name: v.Name, Description: v.Description, ExpectFail: v.ExpectFail, Policy: p})
	}
	return out, nil
}

// setWrites reports whether set, merged into the policy merged, writes the
// node that merged holds at path (a core.PolicyError path: keys joined by
// dots, list indices in brackets), on line.
func setWrites(merged, set *yaml.Node, path string, line int) bool {
	m, s := unalias(merged), set
	for n, step := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(step, "[")
		mv := mappingValue(m, key)
		if mv == nil {
			// A defaulted field: core gives it its parent's line.
			return n > 0 && writesOn(s, line)
		}
		if s = rawValue(s, key); s == nil {
			return false
		}
		m = mv
		for rest != "" {
			var at string
			at, rest, _ = strings.Cut(rest, "]")
			rest = strings.TrimPrefix(rest, "[")
			i, err := strconv.Atoi(at)
			if err != nil || m.Kind != yaml.SequenceNode || unalias(s).Kind != yaml.SequenceNode || i < 0 || i >= len(m.Content) {
				return false
			}
			if m = unalias(m.Content[i]); m == nil {
				return false
			}
			if s = setItem(unalias(s), m, i); s == nil {
				return false
			}
		}
	}
	return writesOn(s, line)
}

// writesOn: core gives an alias's value the alias's line.
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
// m, at index i: the one with m's name when the set names its items
// (mergeNode merges those by name), else the set's item i (the set's list
// replaced the base's whole). nil if the set wrote no such item.
func setItem(s, m *yaml.Node, i int) *yaml.Node {
	if name := itemName(m); name != "" && namedItems(s) {
		for _, c := range s.Content {
			if itemName(c) == name {
				return c
			}
		}
		return nil
	}
	if i < len(s.Content) {
		return s.Content[i]
	}
	return nil
}

// mappingValue returns the value of key in the mapping n, aliases
// followed; nil if n is not a mapping or has no such key.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n = unalias(n); n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return unalias(n.Content[i+1])
		}
	}
	return nil
}
