package scenarios

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Bounds on what a scenario may hold. A scenario is a page a person
// writes, and everything in it is copied into the results and the report:
// a file, a list or a string beyond these is refused when the scenario is
// read, with the bound in the error, rather than run into gigabytes of
// memory and a report no browser opens. The shipped scenarios use a few
// percent of each.
const (
	// MaxFileBytes bounds a scenario file, and a policy file it names.
	MaxFileBytes = 1 << 20
	// MaxPopulations bounds populations (MaxClients bounds their clients).
	MaxPopulations = 64
	// MaxVariants bounds policy variants: each is one more run.
	MaxVariants = 32
	// MaxThresholds bounds thresholds.
	MaxThresholds = 256
	// MaxNameBytes bounds a name: the scenario's, a variant's, a
	// population's; a threshold's text is bounded at MaxThresholdBytes.
	MaxNameBytes = 64
	// MaxThresholdBytes bounds one threshold's text.
	MaxThresholdBytes = 256
	// MaxDescriptionBytes bounds a description, the scenario's or a
	// variant's.
	MaxDescriptionBytes = 2048
)

// readBounded reads the file at path, refusing one over MaxFileBytes
// without reading the rest of it. what names the file in the error ("the
// scenario file", "the policy file").
func readBounded(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, tooBig(path, what)
	}
	return data, nil
}

func tooBig(path, what string) error {
	return &sizeError{fmt.Sprintf("%s: %s is larger than %d bytes (1 MiB), the most sluice reads", path, what, MaxFileBytes)}
}

// sizeError is a file refused for its size; it matches ErrTooBig.
type sizeError struct{ msg string }

func (e *sizeError) Error() string        { return e.msg }
func (e *sizeError) Is(target error) bool { return target == ErrTooBig }

// ErrTooBig matches the error for a file beyond MaxFileBytes.
var ErrTooBig = errors.New("beyond the bounds of a scenario")

// checkBounds refuses lists and strings beyond the bounds above, at the
// first item or the string beyond them.
func (s *Scenario) checkBounds(root *yaml.Node) error {
	lists := []struct {
		key  string
		n, m int
	}{{"populations", len(s.Population), MaxPopulations}, {"variants", len(s.Variants), MaxVariants}, {"thresholds", len(s.Thresholds), MaxThresholds}}
	for _, l := range lists {
		if l.n > l.m {
			return s.fail(root, fmt.Sprintf("%s[%d]", l.key, l.m), []any{l.key, l.m},
				fmt.Sprintf("%d %s, more than the %d a scenario may hold", l.n, l.key, l.m))
		}
	}
	str := func(path string, at []any, v string, limit int) error {
		if len(v) > limit || !utf8.ValidString(v) {
			if !utf8.ValidString(v) {
				return s.fail(root, path, at, "is not valid UTF-8")
			}
			return s.fail(root, path, at, fmt.Sprintf("is %d bytes long, more than the %d allowed", len(v), limit))
		}
		return nil
	}
	if err := str("name", []any{"name"}, s.Name, MaxNameBytes); err != nil {
		return err
	}
	if err := str("description", []any{"description"}, s.Description, MaxDescriptionBytes); err != nil {
		return err
	}
	for i, v := range s.Variants {
		if err := str(fmt.Sprintf("variants[%d].name", i), []any{"variants", i, "name"}, v.Name, MaxNameBytes); err != nil {
			return err
		}
		if err := str(fmt.Sprintf("variants[%d].description", i), []any{"variants", i, "description"}, v.Description, MaxDescriptionBytes); err != nil {
			return err
		}
	}
	for i, p := range s.Population {
		if err := str(fmt.Sprintf("populations[%d].name", i), []any{"populations", i, "name"}, p.Name, MaxNameBytes); err != nil {
			return err
		}
	}
	for i, t := range s.Thresholds {
		if err := str(fmt.Sprintf("thresholds[%d]", i), []any{"thresholds", i}, t, MaxThresholdBytes); err != nil {
			return err
		}
	}
	return nil
}
