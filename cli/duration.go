package cli

import (
	"errors"
	"time"
)

// checkDurationFlag refuses a --duration given as 0: leaving the flag out
// runs the scenario's own duration, and a run of no length is not one.
func checkDurationFlag(given bool, d time.Duration) error {
	if given && d == 0 {
		return usageError{errors.New("--duration: 0s is not a run length (leave the flag out to run the scenario's own duration)")}
	}
	return nil
}
