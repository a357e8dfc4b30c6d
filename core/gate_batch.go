package core

// gateBatch is how many messages CheckBatch touches ahead of deciding them:
// their sessions, buckets and keyed cells (a few lines each) stay well
// inside a first-level cache, and the touch's stack arrays are small.
const gateBatch = 32

// CheckBatch decides msgs at now and writes the verdict of msgs[i] to
// out[i] (out must be at least as long as msgs). The verdicts, and every
// effect on the gate's state (buckets, strikes, lockouts, pending
// requests, counters and events), are those of Check called on each
// message in order at the same now: a message decides after the ones
// before it, whatever session they are of. Like Check it never blocks,
// locks or allocates.
//
// What it adds is memory-level parallelism. With many sessions, a Check
// waits on cache misses one after another: the session's slot, the
// session, its channel's bucket word, its account's entity and the keyed
// layers' cells (account or address, and match); and the
// CompareAndSwaps of its takes (locked instructions) let no later load
// complete before them, so the misses of successive messages never
// overlap. CheckBatch works in chunks of messages: it first loads, with
// plain loads whose misses overlap, each message's session slot, then the
// session's words and the keyed cells of its account or address and its
// match, and only then decides the messages in order on lines already in
// cache. The keyed layers are taken message by message in that second
// pass: each message's account, channel and match takes are all or
// nothing (a later layer's denial refunds the earlier ones) and its
// denials add strikes that the next message of the session reads first,
// so taking one layer for the whole chunk ahead would change verdicts.
//
// Linearization: each message is decided as by Check, at its own takes;
// the batch as a whole is not atomic.
func (g *Gate) CheckBatch(msgs []Message, now int64, out []Verdict) {
	out = out[:len(msgs)]
	for len(msgs) > 0 {
		c := min(len(msgs), gateBatch)
		ms, os := msgs[:c], out[:c]
		g.touch(ms)
		for i := range ms {
			os[i] = g.Check(ms[i], now)
		}
		msgs, out = msgs[c:], out[c:]
	}
}

// CheckBatchUntilDisconnect is CheckBatch that stops after the first
// message whose verdict is Disconnect and returns how many messages it
// decided, that one included (len(msgs) if none was): the messages after
// it are not checked at all, and nothing of theirs is counted. It is for a
// caller that drops a connection's remaining messages once one of them
// ends it, as a server does with the frames of one read after a
// Disconnect: checking those would count them, strike them and take their
// tokens, which checking message by message never does.
func (g *Gate) CheckBatchUntilDisconnect(msgs []Message, now int64, out []Verdict) int {
	out = out[:len(msgs)]
	done := 0
	for len(msgs) > 0 {
		c := min(len(msgs), gateBatch)
		ms, os := msgs[:c], out[:c]
		g.touch(ms)
		for i := range ms {
			v := g.Check(ms[i], now)
			os[i] = v
			if v.Action == Disconnect {
				return done + i + 1
			}
		}
		done += c
		msgs, out = msgs[c:], out[c:]
	}
	return done
}

// touch is CheckBatch's first pass over at most gateBatch messages: in two
// rounds, so that each round's loads are independent of each other (the
// second needs the sessions the first found), it loads what Check will
// read and changes nothing.
func (g *Gate) touch(ms []Message) {
	var ss [gateBatch]*session
	sessions := ss[:len(ms)]
	for i := range ms {
		if j := ms[i].Session.index(); uint64(j) < uint64(len(g.slots)) {
			sessions[i] = g.slots[j].Load()
		}
	}
	var sink uint64
	for i, s := range sessions {
		m := &ms[i]
		if s == nil || s.h != m.Session {
			continue
		}
		sink += s.bytes.Load() + s.frames.Load()
		a := s.acct.Load()
		// The channel bucket a Check takes: the session's own before
		// authentication, the account's after.
		kinds := s.kinds
		if a != nil && a.kinds != nil {
			kinds = a.kinds
		}
		if k := int(m.Kind); k < len(kinds) {
			sink += kinds[k].Load()
		}
		if a != nil {
			sink += uint64(a.strikes.zeroAt.Load()) + a.lock.until.Load()
			touchKeyed(g.account, s.account.Load())
		} else {
			touchKeyed(g.address, s.addrKey)
		}
		if m.Match != 0 {
			touchKeyed(g.match, m.Match)
		}
	}
	gateTouchSink(sink)
}

// gateTouchSink consumes touch's loads so that no compiler may drop them;
// it does nothing.
//
//go:noinline
func gateTouchSink(uint64) {}

// keyedToucher is a keyedBuckets that can load a key's cell ahead of its
// take (limiterKeyed); the layers tests stand in for need not.
type keyedToucher interface {
	touch(key uint64)
}

// touchKeyed loads key's cell in layer, if there is a layer and it can.
func touchKeyed(layer keyedBuckets, key uint64) {
	if t, ok := layer.(keyedToucher); ok {
		t.touch(key)
	}
}

func (k *limiterKeyed) touch(key uint64) { k.l.m.Touch(key) }
