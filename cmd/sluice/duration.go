package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicedev/sluice/scenarios"
)

// checkDurationFlag refuses a --duration given as 0: leaving the flag out
// runs the scenario's own duration, and a run of no length is not one.
func checkDurationFlag(given bool, d time.Duration) error {
	if given && d == 0 {
		return usageError{errors.New("--duration: 0s is not a run length (leave the flag out to run the scenario's own duration)")}
	}
	return nil
}

// checkScaled refuses, as a usage error naming the flag, a --duration d at
// which the scenario would break a rule of its own file
// (Scenario.CheckDuration).
func checkScaled(s *scenarios.Scenario, d time.Duration) error {
	err := s.CheckDuration(d)
	var de *scenarios.DurationError
	if errors.As(err, &de) {
		return usageError{fmt.Errorf("--duration: %w", err)}
	}
	return err
}
