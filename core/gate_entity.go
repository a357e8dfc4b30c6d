package core

import "sync/atomic"

// entity is the state an account or a source address keeps across its
// sessions: strikes, lockout and (accounts) requests in flight per capped
// kind. Its hot fields are atomic; refs and idleSince are guarded by the
// gate's mutex.
type entity struct {
	key       uint64
	strikes   strikeRecord
	lock      lockState
	inflight  []atomic.Int32
	conns     entityConns // addresses: see Connections
	refs      int
	idleSince int64
}

// entityTable is the bounded table of accounts or addresses. It is only
// touched by Open, Authenticate, Close and Step, under the gate's mutex;
// sessions keep a pointer to their entities, so messages never look one up.
type entityTable struct {
	m         map[uint64]*entity
	max       int
	nInflight int
}

func newEntityTable(bound, nInflight int) entityTable {
	return entityTable{m: map[uint64]*entity{}, max: bound, nInflight: nInflight}
}

// acquire returns key's entity with one more reference, creating it if
// needed; nil if the table is full of entities that cannot be forgotten.
func (t *entityTable) acquire(key uint64, now int64) *entity {
	e := t.m[key]
	if e == nil {
		if len(t.m) >= t.max {
			t.sweep(now)
			if len(t.m) >= t.max {
				return nil
			}
		}
		e = &entity{key: key, inflight: make([]atomic.Int32, t.nInflight)}
		e.strikes.zeroAt.Store(now)
		t.m[key] = e
	}
	e.refs++
	return e
}

// release drops one reference.
func (t *entityTable) release(e *entity, now int64) {
	e.refs--
	if e.refs == 0 {
		e.idleSince = now
	}
}

// forgettable reports whether an entity holds nothing a fresh one would
// not: no session, no strikes, no lockout, nothing in flight.
func (e *entity) forgettable(now int64) bool {
	if e.refs > 0 || e.strikes.score(now) > 0 || e.lock.locked(now) {
		return false
	}
	for i := range e.inflight {
		if e.inflight[i].Load() != 0 {
			return false
		}
	}
	return true
}

// sweep forgets every forgettable entity.
func (t *entityTable) sweep(now int64) {
	for k, e := range t.m {
		if e.forgettable(now) {
			delete(t.m, k)
		}
	}
}
