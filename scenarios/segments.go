package scenarios

import (
	"fmt"

	"github.com/sluicedev/sluice/reports"
)

// judge evaluates s's thresholds on every variant of res and says whether
// each came out as expected: expected maps each variant's name to whether
// it was expected to pass (nil: as each variant's Expect says).
func (s *Scenario) judge(res *reports.Results, expected map[string]bool) *Outcome {
	out := &Outcome{Results: res, Passed: true, Expected: expected}
	if out.Expected == nil {
		out.Expected = map[string]bool{}
		for _, v := range res.Variants {
			out.Expected[v.Name] = !v.ExpectsFail()
		}
	}
	for _, v := range res.Variants {
		if s.Evaluate(res, v) != out.Expected[v.Name] {
			out.Passed = false
			out.Unexpected = append(out.Unexpected, v.Name)
		}
		if len(v.Invalid) > 0 {
			out.Passed = false
			out.Invalid = append(out.Invalid, v.Name)
		}
	}
	if !res.Run.Complete {
		out.Passed = false
	}
	return out
}

// MergeSegments merges the results of every segment of one run (see
// Options.Segment and reports.MergeSegments; names[i] names rs[i] in
// errors) and judges the whole by the scenario's thresholds, which the
// results carry: the Outcome a single run of the whole would have had,
// measured by several load generators.
func MergeSegments(rs []*reports.Results, names []string) (*Outcome, error) {
	merged, err := reports.MergeSegments(rs, names)
	if err != nil {
		return nil, err
	}
	s := &Scenario{}
	for _, text := range merged.Run.Thresholds {
		th, err := ParseThreshold(text)
		if err != nil {
			return nil, fmt.Errorf("scenarios: %s: threshold %q: %w", names[0], text, err)
		}
		s.thresholds = append(s.thresholds, th)
	}
	return s.judge(merged, nil), nil
}
