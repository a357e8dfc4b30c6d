package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/internal/suggest"

	"gopkg.in/yaml.v3"
)

// mergeNode returns base with over laid on top: mappings merge key by key,
// lists whose items are all mappings with a name merge item by item (an
// item with a new name is appended), a key's null value ("key:" with
// nothing after it, or "key: ~") changes nothing, at any depth, and
// anything else replaces (a null item of a list is an item like any
// other). Neither input is modified. Aliases are followed: a value the
// base writes as *anchor merges like the value it names.
//
// It also returns what over wrote, for policyError to tell which file a
// field of merged is written in: fromOver maps the path in merged of each
// node taken from over (as core names paths: keys joined by dots, list
// indices in brackets) to its path in over, where a named item may have
// another index. Everything under such a node is over's too; any other
// node is base's, a mapping or list both write included, as merged holds
// base's node with over's entries in it.
func mergeNode(base, over *yaml.Node) (merged *yaml.Node, fromOver map[string]string) {
	m := merger{fromOver: map[string]string{}}
	return m.merge(base, over, "", ""), m.fromOver
}

// merger is one mergeNode call: what it took from over so far.
type merger struct{ fromOver map[string]string }

// merge returns base with over laid on top, as mergeNode does, and
// records what it takes from over; at is their path in the whole result,
// from is over's in the whole of over.
func (m merger) merge(base, over *yaml.Node, at, from string) *yaml.Node {
	base, over = unalias(base), unalias(over)
	if over == nil || over.Kind == 0 || isNull(over) {
		return cloneNode(base)
	}
	if base == nil || base.Kind == 0 || base.Kind != over.Kind {
		return m.take(over, at, from)
	}
	switch base.Kind {
	case yaml.MappingNode:
		out := cloneNode(base)
		for i := 0; i+1 < len(over.Content); i += 2 {
			k, v := over.Content[i], over.Content[i+1]
			found := false
			for j := 0; j+1 < len(out.Content); j += 2 {
				if out.Content[j].Value == k.Value {
					out.Content[j+1] = m.merge(out.Content[j+1], v, join(at, k.Value), join(from, k.Value))
					found = true
					break
				}
			}
			if !found && !isNull(unalias(v)) { // a null writes nothing, here as over a base's value
				out.Content = append(out.Content, cloneNode(k), m.take(v, join(at, k.Value), join(from, k.Value)))
			}
		}
		return out
	case yaml.SequenceNode:
		if !namedItems(base) || !namedItems(over) {
			return m.take(over, at, from)
		}
		out := cloneNode(base)
		for i, item := range over.Content {
			name, itemFrom := itemName(item), index(from, i)
			found := false
			for j, cur := range out.Content {
				if itemName(cur) == name {
					out.Content[j] = m.merge(cur, item, index(at, j), itemFrom)
					found = true
					break
				}
			}
			if !found {
				out.Content = append(out.Content, m.take(item, index(at, len(out.Content)), itemFrom))
			}
		}
		return out
	}
	return m.take(over, at, from)
}

// take returns what over writes (see written) and records it as over's
// node at path from, at path at in the result.
func (m merger) take(over *yaml.Node, at, from string) *yaml.Node {
	m.fromOver[at] = from
	return written(over)
}

// written returns a copy of n without the mapping entries whose value is
// null, at any depth: a null writes nothing, so a key the base lacks stays
// unset, as a key the base has keeps the base's value. Without this, a
// null under a node the base lacks would reach core, which decodes it as
// the zero value (a strike weight of 0, not the default). An alias is
// copied as the node it names (which may hold a null), in the alias's
// place, since core reports a node at its line.
func written(n *yaml.Node) *yaml.Node {
	alias := n
	if n = unalias(n); n == nil {
		return nil
	}
	c := *n
	if alias != n {
		c.Line, c.Column, c.Anchor = alias.Line, alias.Column, ""
	}
	c.Content = make([]*yaml.Node, 0, len(n.Content))
	for i := 0; i < len(n.Content); i++ {
		if n.Kind == yaml.MappingNode && i+1 < len(n.Content) {
			if k, v := n.Content[i], n.Content[i+1]; !isNull(unalias(v)) {
				c.Content = append(c.Content, cloneNode(k), written(v))
			}
			i++
			continue
		}
		c.Content = append(c.Content, written(n.Content[i]))
	}
	return &c
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

// itemNameNode returns the value node of a mapping's name key, or nil; nil
// too for a null name ("name: ~"), which names nothing: such an item is
// not merged by the name "~", and its list is not named throughout.
func itemNameNode(n *yaml.Node) *yaml.Node {
	if v := mappingValue(n, "name"); v != nil && !isNull(v) {
		return v
	}
	return nil
}

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
	Servers     int // game servers: the variant's, else the scenario's
	Node        *yaml.Node
	// fromSet maps the path in Node of each node the variant's set wrote
	// to its path in the set (see mergeNode).
	fromSet map[string]string
}

// variantNodes returns the variants to run: "base" alone when the scenario
// names none, else each named variant.
func (s *Scenario) variantNodes() []VariantNode {
	if len(s.Variants) == 0 {
		return []VariantNode{{Name: "base", Servers: s.serversOf(Variant{}), Node: cloneNode(&s.Policy)}}
	}
	out := make([]VariantNode, 0, len(s.Variants))
	for _, v := range s.Variants {
		n, fromSet := mergeNode(&s.Policy, &v.Set)
		out = append(out, VariantNode{Name: v.Name, Description: v.Description, ExpectFail: v.Expect == "fail", Servers: s.serversOf(v), Node: n, fromSet: fromSet})
	}
	return out
}

// ErrNoVariant is wrapped by the *OptionError for a policy NAME the
// scenario does not define.
var ErrNoVariant = errors.New("scenarios: no policy variant")

// noVariant is the error for --policy NAME when no variant of have has it.
func noVariant(name string, have []NamedPolicy) error {
	return &OptionError{Option: "policy", Msg: fmt.Sprintf("no policy variant %q (have %v)", name, variantNames(have)), err: ErrNoVariant}
}

// variantNames returns the names of the variants, in order.
func variantNames(have []NamedPolicy) []string {
	names := []string{}
	for _, v := range have {
		names = append(names, v.Name)
	}
	return names
}

// NamedPolicy is one policy variant, decoded and validated.
type NamedPolicy struct {
	Name        string
	Description string
	// ExpectFail marks a variant expected to fail its thresholds.
	ExpectFail bool
	// Servers is the number of game servers it runs on (at least 1).
	Servers int
	Policy  core.Policy
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
		out = append(out, NamedPolicy{Name: v.Name, Description: v.Description, ExpectFail: v.ExpectFail, Servers: v.Servers, Policy: p})
	}
	return out, nil
}

// policyError places core's error on variant v (the i-th) in the file
// that writes the field, with the path there: a field the variant's set
// writes is the scenario file's, under variants[i].set (its own index
// for a list item it names); any other is the base policy's, in
// policy_file or under the scenario's policy, and says which variant's
// set it was checked with. The merge recorded which fields the set wrote:
// lines alone cannot tell the files apart, as they number their lines
// apart.
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
	if sp, ok := setPath(v.fromSet, pe.Path); ok {
		return fieldErrorOf(pe, s.File, join(fmt.Sprintf("variants[%d].set", i), sp))
	}
	file, prefix := s.File, "policy"
	if s.PolicyFile != "" {
		file, prefix = s.PolicyFile, ""
	}
	fe := fieldErrorOf(pe, file, join(prefix, pe.Path))
	// Name the set only where there is one: a variant without a set runs
	// the base policy as it is, and its error is the base's alone.
	if i < len(s.Variants) && s.Variants[i].Set.Kind != 0 && !isNull(&s.Variants[i].Set) {
		fe.Msg += fmt.Sprintf(" (with the set of policy variant %q)", v.Name)
	}
	return fe
}

// setPath returns the path in a variant's set of the field core reports
// at path in the variant's policy, and whether the set wrote it: whether
// the field, or a field above it, is one the merge took from the set
// (fromSet, from mergeNode). A field above counts for a field the policy
// leaves out: core reports a defaulted field at its parent's line, which
// is the set's where the set wrote the parent.
func setPath(fromSet map[string]string, path string) (string, bool) {
	at := path
	for {
		if sp, ok := fromSet[at]; ok {
			return sp + path[len(at):], true
		}
		if at == "" {
			return "", false
		}
		// One step up: the key or index at the end goes.
		at = at[:max(strings.LastIndexAny(at, ".["), 0)]
	}
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

// newChannel reports a channel of a variant's set (set, at path) that the
// base policy has no channel of that name for, where it is likely a
// misspelt name rather than a new channel: an item without a class, which
// would merge into nothing and be refused as a channel without one, or a
// name close to one of the base's, which would add a channel beside the
// one meant and leave that one as it is. A complete channel of a name of
// its own is added, as the merge adds any new named item.
func newChannel(base, set *yaml.Node, path string) *FieldError {
	over, have := mappingValue(set, "channels"), mappingValue(base, "channels")
	if over == nil || have == nil || over.Kind != yaml.SequenceNode || have.Kind != yaml.SequenceNode ||
		!namedItems(over) || !namedItems(have) {
		return nil // replaced whole, not merged by name (see mergeNode)
	}
	var names []string
	for _, c := range have.Content {
		names = append(names, itemName(c))
	}
	slices.Sort(names)
	for j, item := range over.Content {
		name := itemNameNode(item)
		if slices.Contains(names, name.Value) {
			continue
		}
		close := suggest.Closest(name.Value, names)
		class := mappingValue(item, "class")
		if close == "" && class != nil && !isNull(class) {
			continue
		}
		msg := fmt.Sprintf("no channel named %q in the base policy", name.Value)
		if close == "" {
			msg += fmt.Sprintf(" (have %s): to add a channel, give its class too", strings.Join(names, ", "))
		} else {
			msg += ": a set merges channels by name, and a new one this close to a base channel's name is taken for a misspelling"
		}
		fe := errAt(name, fmt.Sprintf("%s.channels[%d].name", path, j), msg)
		fe.Suggestion = close
		return fe
	}
	return nil
}
