package core

import "gopkg.in/yaml.v3"

// DecodePolicyNode decodes a policy from a yaml.v3 node that is part of a
// larger document (a scenario file's inline policy, say), so errors carry
// the lines of that document. It is otherwise DecodePolicyYAML.
func DecodePolicyNode(n *yaml.Node) (Policy, error) {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return decodePolicy(yamlNode{n})
}
