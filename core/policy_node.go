package core

import (
	"reflect"

	"gopkg.in/yaml.v3"
)

// DecodePolicyNode decodes a policy from a yaml.v3 node that is part of a
// larger document (a scenario file's inline policy, say), so errors carry
// the lines of that document. It is otherwise DecodePolicyYAML.
func DecodePolicyNode(n *yaml.Node) (Policy, error) {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return decodePolicy(yamlNode{n})
}

// CheckPolicyNode checks a yaml.v3 node, part of a larger document, against
// the Policy type alone: unknown or repeated fields, values of the wrong
// type or out of their set (a class, a reason). It does not validate the
// limits, so a partial policy (one that another is laid over) passes. Its
// errors are *PolicyError with the line and column of the node.
func CheckPolicyNode(n *yaml.Node) error {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	var p Policy
	return bind(yamlNode{n}, reflect.ValueOf(&p).Elem(), "", map[string]int{})
}
