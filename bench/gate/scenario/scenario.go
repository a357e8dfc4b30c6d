// Package scenario gates scenario metrics against a baseline the way
// package gate gates benchmarks: each run of a scenario (one seed in
// driver sim, one repetition in driver loopback) is one sample of each
// metric, and gate.Compare decides with the same test, minimum effect and
// sample rules. The thresholds of a scenario file are absolute limits
// checked on every run (`sluice run` exits 3 when one fails); this package
// catches the drift that stays inside them.
//
//	base, err := scenario.ReadFiles("baseline", baseFiles...) // results.json of each run
//	cand, err := scenario.ReadFiles("candidate", candFiles...)
//	rep, err := gate.Compare(base, cand, scenario.Config())
//	rep.WriteText(os.Stdout) // or WriteJSON; rep.Regressed() fails the gate
package scenario

import (
	"fmt"

	"github.com/sluicedev/sluice/bench/gate"
	"github.com/sluicedev/sluice/reports"
)

// Units of scenario metrics (Set). Lower is better for every one
// of them: honest populations' drop rate, response-time percentiles and
// false disconnects and lockouts; hostile populations' admitted traffic
// and time until cut off (over every client: one never cut off counts as
// the largest Duration).
const (
	UnitDropRate         = "drop-rate"
	UnitP50              = "p50-ns"
	UnitP99              = "p99-ns"
	UnitFalseDisconnects = "false-disconnects"
	UnitFalseLockouts    = "false-lockouts"
	UnitAdmittedPerSec   = "admitted/s"
	UnitAdmittedBytes    = "admitted-B/s"
	UnitCutOffP50        = "cutoff-p50-ns"
	UnitCutOffMax        = "cutoff-max-ns"
)

// Units lists every unit Set emits.
var Units = []string{
	UnitDropRate, UnitP50, UnitP99, UnitFalseDisconnects, UnitFalseLockouts,
	UnitAdmittedPerSec, UnitAdmittedBytes, UnitCutOffP50, UnitCutOffMax,
}

// Package is the package name scenario samples carry.
const Package = "scenario"

// Set turns results files of repeated runs of scenarios (one file
// per run: several seeds in driver sim, or several runs in driver
// loopback) into a Set with one sample per run, so that a scenario metric
// is gated against a baseline the same way as a benchmark (gate.Compare
// with Config). Each population of each variant is a benchmark named
// "Scenario/<scenario>/<variant>/<population>"; honest populations give
// drop-rate (when they have one: see reports.Summary.DropRate), p50-ns,
// p99-ns, false-disconnects and false-lockouts, hostile ones admitted/s,
// admitted-B/s and, when any client was cut off, cutoff-p50-ns and
// cutoff-max-ns. Runs that are incomplete or that a
// variant marks invalid are refused: their numbers cannot be trusted.
func Set(label string, runs ...*reports.Results) (*gate.Set, error) {
	s := &gate.Set{Label: label}
	for _, u := range Units {
		s.SetBetter(u, -1)
	}
	for i, r := range runs {
		if r == nil || !r.Run.Complete {
			return nil, fmt.Errorf("scenario: %s: run %d is incomplete", label, i)
		}
		for _, v := range r.Variants {
			if len(v.Invalid) > 0 {
				return nil, fmt.Errorf("scenario: %s: run %d, variant %s is invalid: %v", label, i, v.Name, v.Invalid)
			}
			for _, p := range v.Populations {
				name := "Scenario/" + r.Run.Scenario + "/" + v.Name + "/" + p.Name
				add := func(unit string, x float64) { s.AddValues(Package, name, unit, x) }
				sm := p.Summary
				if p.Role == reports.Hostile {
					add(UnitAdmittedPerSec, sm.AdmittedPerSec)
					add(UnitAdmittedBytes, sm.AdmittedBytesPerSec)
					// Over every client, as the scenario thresholds count
					// them: one never cut off counts as never (the largest
					// Duration), so catching 1 flooder of 10 in 1s is not
					// better than catching all 10 in 1.5s.
					if c := sm.CutOff; c != nil && c.Of > 0 {
						add(UnitCutOffP50, float64(c.AllP50))
						add(UnitCutOffMax, float64(c.MaxAll()))
					}
					continue
				}
				// No drop rate (a population that writes raw bytes, whose
				// sends are writes and its drops frames): no sample.
				if sm.DropRate != nil {
					add(UnitDropRate, *sm.DropRate)
				}
				add(UnitP50, float64(sm.ResponseP50))
				add(UnitP99, float64(sm.ResponseP99))
				add(UnitFalseDisconnects, float64(sm.FalseDisconnects))
				add(UnitFalseLockouts, float64(sm.FalseLockouts))
			}
		}
	}
	if len(s.Results) == 0 {
		return nil, fmt.Errorf("%w in %s", gate.ErrNoResults, label)
	}
	return s, nil
}

// ReadFiles reads results files (reports.ReadFile), one per run, into a
// Set labelled label.
func ReadFiles(label string, paths ...string) (*gate.Set, error) {
	runs := make([]*reports.Results, 0, len(paths))
	for _, p := range paths {
		r, err := reports.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("scenario: %w", err)
		}
		runs = append(runs, r)
	}
	return Set(label, runs...)
}

// Config is the gate's configuration for comparing such Sets: every
// scenario unit, none exact, floors off, alpha 0.05, minimum effect 10%,
// at least 6 runs per side. A change from zero (an honest drop rate that
// was 0) counts as large: it regresses when it is significant.
func Config() gate.Config {
	return gate.Config{
		Alpha:      gate.DefaultAlpha,
		MinEffect:  0.10,
		MinSamples: gate.DefaultMinSamples,
		Units:      Units,
		ExactUnits: []string{},
		Normalize:  gate.NormalizeNever,
	}
}
