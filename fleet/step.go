package fleet

import (
	"errors"
	"time"
)

// stepper is the state of a refresher that rounds are run on: the
// goroutine's (Start), or the caller's (Step).
type stepper struct {
	r        refresher
	lastBeat time.Time
}

// once runs one refresher round at now: a heartbeat when one is due (every
// round while the store is unavailable: with no lease to ask for, it is
// what finds the store back), then the leases.
func (f *Fleet) once(st *stepper, now time.Time) {
	beat := false
	if !f.healthy.Load() || now.Sub(st.lastBeat) >= f.cfg.Heartbeat {
		st.lastBeat = now
		beat = f.heartbeat()
	}
	if !f.round(&st.r, now, false) && beat {
		// Nothing to lease, and the store answered: available. With
		// leases to ask for, only their round says so, once its grants
		// are in place (a key whose lease ran dry while the store was
		// away must not be denied before they are).
		f.healthy.Store(true)
	}
}

// ErrStarted is returned by Step on a Fleet whose refresher goroutine runs.
var ErrStarted = errors.New("fleet: the refresher is started: Step is for a fleet that is never started")

// Step runs one refresher round at now on the caller's goroutine, for a
// Fleet driven in virtual time (a simulation: its store's clock and its
// gate's times are the caller's, and rounds come when the caller says, at
// Config.Refresh apart if it keeps the refresher's pace), so that the
// same calls give the same leases. A heartbeat is sent when Heartbeat has
// passed since the last one. Step must not be called concurrently with
// itself, nor on a started Fleet (ErrStarted).
func (f *Fleet) Step(now time.Time) error {
	f.mu.Lock()
	started := f.started
	f.mu.Unlock()
	if started {
		return ErrStarted
	}
	f.once(&f.stepper, now)
	return nil
}

// Refresh returns the refresher's period.
func (f *Fleet) Refresh() time.Duration { return f.cfg.Refresh }
