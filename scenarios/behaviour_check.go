package scenarios

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// checkBehaviour validates a population's behaviour name and parameters.
func checkBehaviour(s *Scenario, root *yaml.Node, i int) error {
	p := s.Population[i]
	path := fmt.Sprintf("populations[%d].behaviour", i)
	if p.Behaviour == "" {
		return s.fail(root, path, []any{"populations", i}, "is required")
	}
	return nil
}
