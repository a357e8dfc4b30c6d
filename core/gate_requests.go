package core

import "sync/atomic"

// The session's request tables are exact for any request ids: two ids in
// flight together never share a place, and a completed id is found as a
// replay whatever other ids completed after it, within the replay window.
// Both keep the direct-mapped layout as a fast path, so that the common
// client (ids counting up from 1) pays one load per table:
//
//   - pending has a slot per id's low bits (its home). A request whose home
//     is taken by another id is put in the next free slot instead, and
//     counted in displaced. A lookup checks the home slot, and scans the
//     table only while displaced is not 0. The table has at least twice as
//     many slots as queue.commands, the most requests pending, so a free
//     slot is always there.
//   - done is direct-mapped by id too, and the ring beside it holds the
//     last replayWindow completed ids in completion order. When a Done
//     overwrites a direct slot whose id is still in the ring (it did not
//     just leave it), that id can only be found in the ring from then on,
//     and spilled says so for the rest of the session: lookups then scan
//     the ring as well. In-order completion of counting ids never spills.
//
// A lookup racing a concurrent admission of the same id may miss it;
// claimPending settles that race after claiming (see there).

// pendingIndex returns the slot of pending request id, or -1.
func (g *Gate) pendingIndex(s *session, id uint64) int {
	home := id & g.pendMask
	if s.pending[home].Load() == id {
		return int(home)
	}
	if s.displaced.Load() == 0 {
		return -1
	}
	return scanFor(s.pending, id, -1)
}

// scanFor returns the index of the first word of t other than skip that
// holds id, or -1.
func scanFor(t []atomic.Uint64, id uint64, skip int) int {
	for i := range t {
		if i != skip && t[i].Load() == id {
			return i
		}
	}
	return -1
}

// claimPending puts id in a free pending slot and returns its index, or
// returns -1 with Duplicate when the same id was admitted concurrently, or
// with QueueFull when no slot is free (the caller's queue count has already
// bounded the pending requests, so this only happens while slots are being
// released). The caller has checked that id is not pending.
//
// Two admissions of one id racing each other both pass that check; each
// then claims a slot, and one that claimed a displaced slot, or saw
// displaced requests after claiming its home, scans for another slot
// holding id and backs off if it finds one. Of two such admissions at least
// one sees the other (each counts a displaced claim before making it, and
// reads the count only after its own claim), so at most one is admitted;
// both may back off.
func (g *Gate) claimPending(s *session, id uint64) (int, Reason) {
	home := id & g.pendMask
	if s.pending[home].CompareAndSwap(0, id) {
		if s.displaced.Load() != 0 && scanFor(s.pending, id, int(home)) >= 0 {
			s.pending[home].CompareAndSwap(id, 0)
			return -1, Duplicate
		}
		return int(home), None
	}
	if s.pending[home].Load() == id {
		return -1, Duplicate
	}
	s.displaced.Add(1)
	n := uint64(len(s.pending))
	for k := uint64(1); k < n; k++ {
		i := (home + k) & g.pendMask
		if s.pending[i].Load() != 0 || !s.pending[i].CompareAndSwap(0, id) {
			continue
		}
		if scanFor(s.pending, id, int(i)) >= 0 {
			g.unpend(s, i, id)
			return -1, Duplicate
		}
		return int(i), None
	}
	s.displaced.Add(-1)
	return -1, QueueFull
}

// unpend clears pending slot i if it still holds id, and reports whether it
// did; a displaced request leaves the displaced count with it.
func (g *Gate) unpend(s *session, i, id uint64) bool {
	if !s.pending[i].CompareAndSwap(id, 0) {
		return false
	}
	if i != id&g.pendMask {
		s.displaced.Add(-1)
	}
	return true
}

// replayed reports whether id is among the session's completed requests.
func (g *Gate) replayed(s *session, id uint64) bool {
	if s.done[id&g.replayMask].Load() == id {
		return true
	}
	return s.spilled.Load() && scanFor(s.ring, id, -1) >= 0
}

// recordDone enters a completed id in the replay tables.
func (g *Gate) recordDone(s *session, id uint64) {
	pos := (s.ringPos.Add(1) - 1) & g.replayMask
	evicted := s.ring[pos].Swap(id)
	slot := &s.done[id&g.replayMask]
	if old := slot.Load(); old != 0 && old != id && old != evicted && !s.spilled.Load() {
		s.spilled.Store(true) // before the overwrite: a lookup for old never finds neither
	}
	slot.Store(id)
}
