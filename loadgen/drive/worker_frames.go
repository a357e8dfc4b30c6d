package drive

import (
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// frameKind returns the kind a frame of the reference protocol counts
// under: an Input or a Request on the channel of a kind (SetChannels),
// a Ping, else raw.
func (w *Worker) frameKind(m *wire.Msg) behave.Kind {
	switch m.Type {
	case wire.TypePing:
		return behave.KindPing
	case wire.TypeInput, wire.TypeRequest:
		for k, ch := range w.channels {
			if ch == int(m.Kind) {
				if t, _, ok := behave.Kind(k).Wire(); ok && t == m.Type {
					return behave.Kind(k)
				}
			}
		}
	}
	return behave.KindRaw
}

// eachFrame calls f with the kind and size of every frame in data (what a
// length prefix delimits; the rest, if any, as one raw frame).
func (w *Worker) eachFrame(data []byte, f func(k behave.Kind, size int)) {
	var d wire.Decoder
	d.Max = wire.MaxFrameLimit
	d.Reset(data)
	var m wire.Msg
	for {
		err := d.Next(&m)
		switch err {
		case nil:
			f(w.frameKind(&m), m.Size)
			continue
		case wire.ErrMalformed, wire.ErrUnknownType:
			f(behave.KindRaw, m.Size)
			continue
		}
		if rest := d.Rest(); len(rest) > 0 && err != nil {
			f(behave.KindRaw, len(rest))
		}
		return
	}
}

// frames carries out an OpFrames: a.Data in one write, each frame
// counted under its kind, none awaiting a reply, written at once while
// the Hello awaits its answer.
func (w *Worker) frames(i int32, cs *clientState, a *behave.Action, now int64) {
	w.wbuf, w.meta = append(w.wbuf[:0], a.Data...), w.meta[:0]
	first := true
	w.eachFrame(a.Data, func(k behave.Kind, size int) {
		if first {
			w.Record(now, cs.pop, k, record.SendLag, now-a.At)
			first = false
		}
		if n := len(w.meta); n > 0 && w.meta[n-1].kind == k {
			w.meta[n-1].n++
			w.meta[n-1].bytes += int64(size)
			return
		}
		w.meta = append(w.meta, frameMeta{kind: k, intended: a.At, n: 1, bytes: int64(size)})
	})
	if len(w.meta) == 0 {
		return
	}
	if cs.state == down || cs.state == halfClosed {
		w.countAll(now, cs, w.meta, record.NotSent)
		return
	}
	if cs.state == handshake && !cs.frozen && len(cs.held) == 0 {
		// Not held for the Hello's answer, as OpSend's frames are: a
		// traced read's frames were read by the recorded server at its
		// time, so its client had sent them then, answered or not (a
		// flood logs in and bursts within a round trip). Held, they
		// would reach the server a round trip late, or, with the
		// session's recorded close due first, never, and its strikes
		// with them.
		w.write(i, cs, w.wbuf, w.meta, now)
		return
	}
	w.transmit(i, cs, now)
}

// framesOverdue counts an OpFrames still due at the end of the run (see
// overdue): its frames HeldAtEnd, or NotSent on a client that would be
// down.
func (w *Worker) framesOverdue(a *behave.Action, pop int, up bool, now int64) {
	o := record.HeldAtEnd
	if !up {
		o = record.NotSent
	}
	first := true
	w.eachFrame(a.Data, func(k behave.Kind, _ int) {
		if first {
			w.Record(now, pop, k, record.SendLag, now-a.At)
			first = false
		}
		w.Add(now, pop, k, o, 1)
	})
}
