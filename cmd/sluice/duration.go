package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sluicedev/sluice/scenarios"
	"gopkg.in/yaml.v3"
)

// checkDurationFlag refuses a --duration given as 0: leaving the flag out
// runs the scenario's own duration, and a run of no length is not one.
func checkDurationFlag(given bool, d time.Duration) error {
	if given && d == 0 {
		return usageError{errors.New("--duration: 0s is not a run length (leave the flag out to run the scenario's own duration)")}
	}
	return nil
}

// checkScaled checks the scenario as it would run at --duration d with the
// same checks as its file: the file, with its duration set to d and its
// warmup, population windows and ramps scaled as scenarios.Run scales them
// (and its interval cut to d), is parsed again. What the file would refuse
// at that length is a usage error naming the flag.
func checkScaled(s *scenarios.Scenario, d time.Duration) error {
	if d <= 0 || d == s.Duration {
		return nil
	}
	data, err := os.ReadFile(s.File)
	if err != nil {
		return fmt.Errorf("scenarios: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", s.File, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil // the file parsed as a scenario: this does not happen
	}
	// As scenarios.Run scales them.
	scale := func(x time.Duration) time.Duration {
		return time.Duration(float64(x) * float64(d) / float64(s.Duration))
	}
	root := doc.Content[0]
	setDuration(root, "duration", d)
	setDuration(root, "warmup", scale(s.Warmup))
	setDuration(root, "interval", min(s.Interval, d))
	if pops := mapValue(root, "populations"); pops != nil && pops.Kind == yaml.SequenceNode && len(pops.Content) == len(s.Population) {
		for i, pn := range pops.Content {
			if pn.Kind != yaml.MappingNode {
				continue
			}
			p := s.Population[i]
			setDuration(pn, "start", scale(p.Start))
			setDuration(pn, "stop", scale(p.Stop))
			if a := mapValue(pn, "arrival"); a != nil && a.Kind == yaml.MappingNode && p.Arrival.Kind == scenarios.ArrivalRamp {
				// A copy: an anchored mapping stays as it was for the
				// populations that alias it.
				c := *a
				c.Content = append([]*yaml.Node(nil), a.Content...)
				setDuration(&c, "over", scale(p.Arrival.Over))
				setValue(pn, "arrival", &c)
			}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil // the scaled file cannot be written back: Run checks the rest
	}
	if _, err := scenarios.Parse(out, s.File); err != nil {
		var fe *scenarios.FieldError
		if !errors.As(err, &fe) {
			return err
		}
		note := ""
		if fe.Path == "interval" && s.Interval > d {
			note = fmt.Sprintf(" (the scenario's interval, %v, is cut to the run's length)", s.Interval)
		}
		return usageError{fmt.Errorf("--duration: %v is refused for %s: scaled to that length, its %s %s%s", d, s.File, fe.Path, fe.Msg, note)}
	}
	return nil
}

// mapValue returns the value of key in mapping m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setValue sets key in mapping m to v, replacing the value node (an
// anchored one is left as it is) or adding the key.
func setValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

func setDuration(m *yaml.Node, key string, d time.Duration) {
	setValue(m, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.String()})
}
