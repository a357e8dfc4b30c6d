package scenarios

import (
	"errors"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// DurationError says that a scenario, scaled to a run length other than its
// own (Options.Duration), breaks a rule its file is held to: Err is what
// Parse says of the file with that duration and the scaled windows.
type DurationError struct {
	Duration time.Duration // the run length asked for
	File     string
	Err      *FieldError
	// Note explains a value the scaling itself set, when one is at fault
	// (the interval, cut to the run's length).
	Note string
}

func (e *DurationError) Error() string {
	return fmt.Sprintf("%v is refused for %s: scaled to that length, its %s %s%s", e.Duration, e.File, e.Err.Path, e.Err.Msg, e.Note)
}

func (e *DurationError) Unwrap() error { return e.Err }

// checkDuration reports whether s may run at duration d (Options.Duration)
// under the rules of its own file: the file's bytes are parsed again with
// its duration set to d and its warmup, population windows, ramps and
// interval as Run scales them. A refusal is a *DurationError; d of 0 or
// s's own duration is always accepted.
func (s *Scenario) checkDuration(d time.Duration) error {
	if d <= 0 || d == s.Duration {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(s.data, &doc); err != nil {
		return yamlSyntaxError(s.File, s.data, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil // s was parsed from this file, so this does not happen
	}
	c := *s
	c.Population = append([]Population(nil), s.Population...)
	c.scaleTo(d)
	root := doc.Content[0]
	setDuration(root, "duration", c.Duration)
	setDuration(root, "warmup", c.Warmup)
	setDuration(root, "interval", c.Interval)
	if pops := mappingValue(root, "populations"); pops != nil && pops.Kind == yaml.SequenceNode && len(pops.Content) == len(c.Population) {
		for i, pn := range pops.Content {
			if pn.Kind != yaml.MappingNode {
				continue
			}
			p := c.Population[i]
			setDuration(pn, "start", p.Start)
			setDuration(pn, "stop", p.Stop)
			if a := mappingValue(pn, "arrival"); a != nil && a.Kind == yaml.MappingNode && p.Arrival.Kind == ArrivalRamp {
				// A copy: an anchored mapping stays as it was for the
				// populations that alias it.
				cp := *a
				cp.Content = append([]*yaml.Node(nil), a.Content...)
				setDuration(&cp, "over", p.Arrival.Over)
				setValue(pn, "arrival", &cp)
			}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil // the scaled file cannot be written back: Run checks the rest
	}
	if _, err := Parse(out, s.File); err != nil {
		var fe *FieldError
		if !errors.As(err, &fe) {
			return err
		}
		e := &DurationError{Duration: d, File: s.File, Err: fe}
		if fe.Path == "interval" && s.Interval > d {
			e.Note = fmt.Sprintf(" (the scenario's interval, %v, is cut to the run's length)", s.Interval)
		}
		return e
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
