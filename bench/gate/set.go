package gate

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// ErrNoResults is wrapped by the error of a side with no benchmark results.
var ErrNoResults = errors.New("gate: no benchmark results")

// Set is one side of a comparison: benchmark results, as read from `go test
// -bench` output files (ReadFiles, Read) or built from values (AddValues),
// and the unit metadata that came with them. The i-th result of a
// benchmark is its i-th sample; floor normalisation pairs the i-th sample
// of a benchmark with the i-th sample of its floor when both have as many.
// The zero Set is empty and ready to use; a Set is not safe for concurrent
// use.
type Set struct {
	// Label names the side in reports (the file names, by default).
	Label string
	// Results are the results in the order read; Compare does not modify
	// them.
	Results []*benchfmt.Result
	// Units is the unit metadata ("Unit x better=higher" lines).
	Units benchfmt.UnitMetadataMap
	// Warnings are lines that looked like results but did not parse.
	Warnings []string
}

// ReadFiles reads `go test -bench` output (the Go benchmark format) from
// the files, in order, into one Set labelled with their names. A path "-"
// is standard input.
func ReadFiles(paths ...string) (*Set, error) {
	s := &Set{Label: strings.Join(paths, ",")}
	for _, p := range paths {
		var r io.Reader = os.Stdin
		if p != "-" {
			f, err := os.Open(p)
			if err != nil {
				return nil, fmt.Errorf("gate: %w", err)
			}
			defer f.Close()
			r = f
		}
		if err := s.read(r, p); err != nil {
			return nil, err
		}
	}
	if len(s.Results) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoResults, s.Label)
	}
	return s, nil
}

// Read reads one stream of Go benchmark format named name into a Set.
func Read(r io.Reader, name string) (*Set, error) {
	s := &Set{Label: name}
	if err := s.read(r, name); err != nil {
		return nil, err
	}
	if len(s.Results) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoResults, name)
	}
	return s, nil
}

// ReadAppend reads more Go benchmark format into s (for a side gathered
// from several runs, as `sluice bench ab` does).
func (s *Set) ReadAppend(r io.Reader, name string) error { return s.read(r, name) }

func (s *Set) read(r io.Reader, name string) error {
	br := benchfmt.NewReader(r, name)
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.Result:
			s.Results = append(s.Results, rec.Clone())
		case *benchfmt.SyntaxError:
			s.Warnings = append(s.Warnings, rec.Error())
		}
	}
	if err := br.Err(); err != nil {
		return fmt.Errorf("gate: reading %s: %w", name, err)
	}
	if s.Units == nil {
		s.Units = benchfmt.UnitMetadataMap{}
	}
	maps.Copy(s.Units, br.Units())
	return nil
}

// AddValues appends one result per value: benchmark name (without the
// "Benchmark" prefix, e.g. "Scenario/flood/honest/p99") in package pkg,
// one iteration, in unit. Use it to gate measurements that are not Go
// benchmarks (scenario metrics) the same way as benchmarks.
func (s *Set) AddValues(pkg, name, unit string, values ...float64) {
	for _, v := range values {
		r := &benchfmt.Result{
			Name:   benchfmt.Name(name),
			Iters:  1,
			Values: []benchfmt.Value{{Value: v, Unit: unit}},
		}
		if pkg != "" {
			r.Config = []benchfmt.Config{{Key: "pkg", Value: []byte(pkg), File: true}}
		}
		s.Results = append(s.Results, r)
	}
}

// SetBetter records whether higher (+1) or lower (-1) values of unit are
// better, as a "Unit <unit> better=higher|lower" metadata line would.
func (s *Set) SetBetter(unit string, better int) {
	if s.Units == nil {
		s.Units = benchfmt.UnitMetadataMap{}
	}
	v := "lower"
	if better > 0 {
		v = "higher"
	}
	k := benchfmt.UnitMetadataKey{Unit: unit, Key: "better"}
	s.Units[k] = &benchfmt.UnitMetadata{UnitMetadataKey: k, OrigUnit: unit, Value: v}
}

// Write writes the set in the Go benchmark format (unit metadata, then
// the results with their file configuration), so that it can be read back
// or committed as a baseline.
func (s *Set) Write(w io.Writer) error {
	bw := benchfmt.NewWriter(w)
	keys := slices.SortedFunc(maps.Keys(s.Units), func(a, b benchfmt.UnitMetadataKey) int {
		return cmp.Or(strings.Compare(a.Unit, b.Unit), strings.Compare(a.Key, b.Key))
	})
	for _, k := range keys {
		if err := bw.Write(s.Units[k]); err != nil {
			return err
		}
	}
	for _, r := range s.Results {
		if err := bw.Write(r); err != nil {
			return err
		}
	}
	return nil
}

// CompareFiles reads each side's `go test -bench` output files with
// ReadFiles and compares them with Compare: what `sluice gate BASE CAND`
// does.
func CompareFiles(base, cand []string, cfg Config) (*Report, error) {
	b, err := ReadFiles(base...)
	if err != nil {
		return nil, err
	}
	c, err := ReadFiles(cand...)
	if err != nil {
		return nil, err
	}
	return Compare(b, c, cfg)
}
