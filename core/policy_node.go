package core

import "gopkg.in/yaml.v3"

// DecodePolicyNode decodes a policy from a yaml.v3 node that is part of a
// larger document (a scenario file's inline policy, say), so errors carry
// the lines of that document. It is otherwise DecodePolicyYAML.
func DecodePolicyNode(n *yaml.Node) (Policy, error) {
	return decodePolicy(documentNode(n))
}

// CheckPolicyNode checks a yaml.v3 node, part of a larger document, against
// the Policy type alone: unknown or repeated fields, values of the wrong
// type or out of their set (a class, a reason). It does not validate the
// limits, so a partial policy (one that another is laid over) passes. Its
// errors are *PolicyError with the line and column of the node.
func CheckPolicyNode(n *yaml.Node) error {
	_, err := bindPolicy(documentNode(n))
	return err
}

// documentNode is n as the binder sees it, a one-node document unwrapped.
func documentNode(n *yaml.Node) yamlNode {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return yamlNode{n}
}
