package sim

import (
	"github.com/sluicedev/sluice/trace"
)

// What a driver other than the sim needs of a TraceFeed to replay its
// trace on its own (the loopback driver: loadgen's trace_loopback.go):
// the same window, time scale, copies, sampling and routing of sessions
// to populations as the sim's, one record at a time.

// NextRecord returns the feed's next record in its window and its run
// time, and moves past it; ok is false at the end (or at damage: see
// Err). The record is valid until the next call. Sessions
// that Sample leaves out are skipped here, as the sim skips them.
func (f *TraceFeed) NextRecord() (r *trace.Record, at int64, ok bool) {
	for f.has {
		f.taken, at = *f.next, f.at
		r = &f.taken
		f.advance()
		if r.Session != 0 && !f.keep(r.Session) {
			if r.Op == trace.OpOpen {
				f.stats.Skipped++
			}
			continue
		}
		if r.Op == trace.OpLost {
			f.stats.Lost += r.Lost
		}
		return r, at, true
	}
	return nil, 0, false
}

// PopulationOf returns the population that replays trace session s of
// group whose recorded label is recorded (after Trace.Labels), or -1:
// the sim's routing of sessions to populations.
func (f *TraceFeed) PopulationOf(s uint64, group string, recorded trace.Label) int {
	return f.popOf(group, f.labelOf(s, recorded))
}

// Copy returns the feed's copy number (from 0).
func (f *TraceFeed) Copy() int { return f.copy }

// FreshAccount returns the account a traced session authenticates with:
// the recorded one, moved out of the synthetic clients' (and the other
// copies') range as the sim moves it (see NewTraceFeed).
func (f *TraceFeed) FreshAccount(recorded uint64) uint64 {
	if f.fresh {
		return recorded ^ uint64(f.copy)<<48 | 1<<40
	}
	return recorded
}

// CountSession counts a session replayed by population pop in Stats.
func (f *TraceFeed) CountSession(pop int) {
	f.stats.Sessions++
	f.stats.ByPopulation[pop]++
}

// CountSkipped counts a session left out in Stats.
func (f *TraceFeed) CountSkipped() { f.stats.Skipped++ }

// CountFrame counts a replayed frame in Stats.
func (f *TraceFeed) CountFrame() { f.stats.Frames++ }

// walkState is what NextRecord keeps: the record it returned (a copy:
// the reader's own is overwritten by the read ahead).
type walkState struct {
	taken trace.Record
}
