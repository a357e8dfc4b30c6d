package behave

// Stream yields one client's actions in order of intended time (At never
// decreases). It is pulled lazily, one action at a time, so a client costs
// the same memory however long the run. A Stream is not safe for concurrent
// use.
type Stream interface {
	// Next fills a with the next action and reports whether there was
	// one. a.Data stays valid until the following call.
	Next(a *Action) bool
}

// Collect pulls every action of s (at most limit) into a slice, copying
// each action's Data. It is meant for tests and traces.
func Collect(s Stream, limit int) []Action {
	var out []Action
	var a Action
	for len(out) < limit && s.Next(&a) {
		if a.Data != nil {
			a.Data = append([]byte(nil), a.Data...)
		}
		out = append(out, a)
	}
	return out
}

// List yields fixed actions, dropping those at or after end.
type List struct {
	Acts []Action
	End  int64
}

func (l *List) Next(a *Action) bool {
	if len(l.Acts) == 0 || l.Acts[0].At >= l.End {
		return false
	}
	*a = l.Acts[0]
	l.Acts = l.Acts[1:]
	return true
}

// ticker yields tmpl at start + k·period, each tick moved by a uniform
// jitter in ±jitter (kept below half a period, so ticks never reorder), and
// never before the previous tick.
type ticker struct {
	k, prev                    int64
	start, period, jitter, end int64
	rng                        Rand
	tmpl                       Action
}

// newTicker returns a ticker drawing its jitter from rng, which it takes
// over: it keeps its own copy of rng's state (next to its other fields, as
// it is drawn from at every tick), so the caller must not draw from rng
// again.
func newTicker(rng *Rand, tmpl Action, start, period, jitter, end int64) *ticker {
	period = max(period, 1)
	jitter = min(max(jitter, 0), (period-1)/2)
	return &ticker{rng: *rng, tmpl: tmpl, start: start, period: period, jitter: jitter, end: end, prev: start}
}

// newPhasedTicker returns a ticker whose first tick is at a uniform time
// in [t0, t0+period), drawn from rng before the ticker takes it over, so
// that clients that connect together do not tick together.
func newPhasedTicker(rng *Rand, tmpl Action, t0, period, jitter, end int64) *ticker {
	return newTicker(rng, tmpl, t0+rng.Between(0, period-1), period, jitter, end)
}

func (t *ticker) Next(a *Action) bool {
	at := t.start + t.k*t.period
	if t.jitter > 0 {
		at += t.rng.Between(-t.jitter, t.jitter)
	}
	at = max(at, t.prev)
	if at >= t.end || t.start+t.k*t.period >= t.end {
		return false
	}
	t.k++
	t.prev = at
	*a = t.tmpl
	a.At = at
	return true
}

// episodes yields short sequences of actions ("episodes": a double click,
// a freeze and its flush, a drop and its reconnect ladder) separated by
// random gaps. expand appends one episode's actions, starting at at, to
// out; gap returns the time from the end of one episode to the start of
// the next. Episodes never overlap, and actions at or after end are
// dropped.
type episodes struct {
	qi     int
	queue  []Action
	next   int64
	end    int64
	rng    Rand
	gap    func(r *Rand) int64
	expand func(r *Rand, at int64, out []Action) []Action
}

// newEpisodes returns episodes drawing from rng, which it takes over (it
// keeps its own copy of rng's state): the caller must not draw from rng
// again.
func newEpisodes(rng *Rand, first, end int64, gap func(*Rand) int64, expand func(*Rand, int64, []Action) []Action) *episodes {
	return &episodes{rng: *rng, next: first, end: end, gap: gap, expand: expand}
}

func (e *episodes) Next(a *Action) bool {
	for e.qi == len(e.queue) {
		if e.next >= e.end {
			return false
		}
		e.queue = e.expand(&e.rng, e.next, e.queue[:0])
		e.qi = 0
		last := e.next
		for i := range e.queue {
			e.queue[i].At = max(e.queue[i].At, last)
			last = e.queue[i].At
		}
		e.next = last + max(e.gap(&e.rng), 1)
	}
	if e.queue[e.qi].At >= e.end {
		e.qi, e.queue, e.next = 0, e.queue[:0], e.end
		return false
	}
	*a = e.queue[e.qi]
	e.qi++
	return true
}

// newEpisodesAfter returns episodes whose first one comes a gap after t0,
// drawn like every later gap: a behaviour's episodes start their schedule
// at its connect.
func newEpisodesAfter(rng *Rand, t0, end int64, gap func(*Rand) int64, expand func(*Rand, int64, []Action) []Action) *episodes {
	return newEpisodes(rng, t0+gap(rng), end, gap, expand)
}

// poissonGap returns a gap function for a Poisson process of the given
// mean interval.
func poissonGap(mean int64) func(*Rand) int64 {
	return func(r *Rand) int64 { return r.Exp(mean) }
}

// spreadGap returns a gap function uniform in [mean/2, 3·mean/2].
func spreadGap(mean int64) func(*Rand) int64 {
	return func(r *Rand) int64 { return r.Spread(mean) }
}

// merge interleaves streams by intended time; on a tie the stream listed
// first goes first. A stream's next action is pulled only when the action
// it last yielded has been handed on and the caller asks again, so that
// yielded Data is not overwritten while the caller still uses it. An
// exhausted stream is removed (the others keep their order), so that
// picking the next one scans only the head times of live streams.
type merge struct {
	at    []int64 // heads[i].At
	subs  []Stream
	heads []Action
	stale int // index whose head must be refilled, or -1
	init  bool
	// Room for a few streams in the merge's own allocation, so that what
	// every Next reads is close together in memory.
	atBuf    [mergeInline]int64
	subsBuf  [mergeInline]Stream
	headsBuf [mergeInline]Action
}

// mergeInline is how many streams a merge holds without allocating more.
const mergeInline = 8

func newMerge(subs ...Stream) *merge {
	n := 0
	for _, s := range subs {
		if s != nil {
			n++
		}
	}
	m := &merge{stale: -1}
	if n <= mergeInline {
		m.subs, m.heads, m.at = m.subsBuf[:0], m.headsBuf[:n], m.atBuf[:n]
	} else {
		m.subs, m.heads, m.at = make([]Stream, 0, n), make([]Action, n), make([]int64, n)
	}
	for _, s := range subs {
		if s != nil {
			m.subs = append(m.subs, s)
		}
	}
	return m
}

// remove drops stream i, keeping the others' order.
func (m *merge) remove(i int) {
	m.subs = append(m.subs[:i], m.subs[i+1:]...)
	m.heads = append(m.heads[:i], m.heads[i+1:]...)
	m.at = append(m.at[:i], m.at[i+1:]...)
}

func (m *merge) Next(a *Action) bool {
	if !m.init {
		m.init = true
		for i := 0; i < len(m.subs); {
			if m.subs[i].Next(&m.heads[i]) {
				m.at[i] = m.heads[i].At
				i++
			} else {
				m.remove(i)
			}
		}
	} else if i := m.stale; i >= 0 {
		if m.subs[i].Next(&m.heads[i]) {
			m.at[i] = m.heads[i].At
		} else {
			m.remove(i)
		}
	}
	if len(m.at) == 0 {
		m.stale = -1
		return false
	}
	best, bat := 0, m.at[0]
	for i := 1; i < len(m.at); i++ {
		if m.at[i] < bat {
			best, bat = i, m.at[i]
		}
	}
	m.stale = best
	*a = m.heads[best]
	return true
}
