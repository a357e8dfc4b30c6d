package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
)

// script plays a fixed hostile mix against g, Stepping between rounds, and
// returns every verdict in order. between, when not nil, runs after the
// first round's Step.
func script(t *testing.T, g *core.Gate, between func()) []core.Verdict {
	t.Helper()
	var out []core.Verdict
	var hs []core.Session
	for i := range 20 {
		h, v := g.Open(addr(i), 0)
		require.True(t, v.OK())
		if i%2 == 0 {
			require.True(t, g.Authenticate(h, uint64(i+1), 0).OK())
		}
		hs = append(hs, h)
	}
	for round := range 20 {
		now := int64(round) * int64(10*time.Millisecond)
		for i, h := range hs {
			for j := range 30 {
				m := core.Message{Session: h, Kind: 0, Size: 10}
				switch {
				case j%7 == 0:
					m.Size = 1000 // Oversize
				case i%3 == 0 && j%2 == 0:
					m.Kind, m.Request = 1, uint64(round*100+j) // chat requests
				}
				out = append(out, g.Check(m, now))
			}
		}
		g.Step(now)
		if round == 0 && between != nil {
			between()
		}
	}
	return out
}

// blockingHandler is a slog.Handler whose Handle blocks until released.
type blockingHandler struct {
	entered atomic.Int32
	release chan struct{}
}

func (h *blockingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *blockingHandler) Handle(context.Context, slog.Record) error {
	h.entered.Add(1)
	<-h.release
	return nil
}
func (h *blockingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *blockingHandler) WithGroup(string) slog.Handler      { return h }

// panickingHandler is a slog.Handler whose Handle panics.
type panickingHandler struct{ calls atomic.Int32 }

func (h *panickingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *panickingHandler) Handle(context.Context, slog.Record) error {
	h.calls.Add(1)
	panic("handler failed")
}
func (h *panickingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *panickingHandler) WithGroup(string) slog.Handler      { return h }

// within runs f and fails the test if it has not returned in d (a stall).
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("stalled for %v", d)
	}
}

// A handler that blocks holds only the log's writer: every decision is the
// one a gate without the log makes, the whole script runs while the
// handler is blocked, and the reports the writer could not take are
// dropped and counted.
func TestSecurityLogBlockingHandlerChangesNothing(t *testing.T) {
	want := script(t, testGate(t, 32), nil)

	g := testGate(t, 32)
	h := &blockingHandler{release: make(chan struct{})}
	l := NewSecurityLog(g, h, SecurityLogOptions{Interval: time.Millisecond, Buffer: 8})
	var got []core.Verdict
	within(t, 30*time.Second, func() {
		got = script(t, g, func() {
			for h.entered.Load() == 0 { // the writer is now stuck in Handle
				time.Sleep(time.Millisecond)
			}
		})
	})
	assert.Equal(t, want, got)
	assert.Equal(t, int32(1), h.entered.Load(), "the handler is still blocked in its first record")
	st := l.Stats()
	assert.Positive(t, st.BufferFull, "reports past the buffer were dropped, not waited for")
	assert.Equal(t, uint64(0), g.Stats().ObserverPanics)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, l.Close(ctx), context.DeadlineExceeded, "Close does not wait past its context for a blocked handler")
	close(h.release)
	require.NoError(t, l.Close(context.Background()))
}

// A handler that panics changes no decision either; its panics are
// recovered on the writer and counted, not as observer panics of the gate.
func TestSecurityLogPanickingHandlerChangesNothing(t *testing.T) {
	want := script(t, testGate(t, 32), nil)
	g := testGate(t, 32)
	h := &panickingHandler{}
	l := NewSecurityLog(g, h, SecurityLogOptions{Interval: time.Millisecond})
	var got []core.Verdict
	within(t, 30*time.Second, func() { got = script(t, g, nil) })
	require.NoError(t, l.Close(context.Background()))
	assert.Equal(t, want, got)
	st := l.Stats()
	assert.Positive(t, h.calls.Load())
	assert.Equal(t, uint64(h.calls.Load()), st.HandlerPanics)
	assert.Equal(t, uint64(0), st.Written)
	assert.Equal(t, uint64(0), g.Stats().ObserverPanics)
}

// syncBuffer is a bytes.Buffer safe for the writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) records(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(s.b.Bytes()))
	for dec.More() {
		var m map[string]any
		require.NoError(t, dec.Decode(&m))
		out = append(out, m)
	}
	return out
}

// Within one interval the log writes one record per session, event and
// reason, whose counts sum to what the gate counted; each names the
// session, account and source.
func TestSecurityLogCoalescesPerSessionAndReason(t *testing.T) {
	g := testGate(t, 32)
	var buf syncBuffer
	l := NewSecurityLog(g, slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), SecurityLogOptions{Interval: time.Hour, Buffer: 1 << 16})
	script(t, g, nil)
	require.NoError(t, l.Close(context.Background()))
	recs := buf.records(t)
	require.NotEmpty(t, recs)
	type key struct {
		event, reason string
		session       float64
	}
	seen := map[key]bool{}
	var floods, floodBytes float64
	for _, r := range recs {
		k := key{r["event"].(string), r["reason"].(string), r["session"].(float64)}
		assert.False(t, seen[k], "two records for %v in one interval", k)
		seen[k] = true
		assert.Contains(t, r, "account")
		assert.Equal(t, "sluice security: "+k.event, r["msg"])
		if k.event == EventFlood {
			floods += r["count"].(float64)
			floodBytes += r["bytes"].(float64)
			assert.Regexp(t, `^10\.0\.0\.\d+/32$`, r["source"], "the session was open at its Step")
		}
	}
	st := g.Stats()
	assert.Equal(t, float64(st.TransportFloods), floods)
	assert.Equal(t, float64(st.TransportFloodBytes), floodBytes)
	events := map[string]bool{}
	for k := range seen {
		events[k.event] = true
	}
	assert.True(t, events[EventFlood] && events[EventDisconnect] && events[EventLockout], "events seen: %v", events)
	ls := l.Stats()
	assert.Equal(t, uint64(len(recs)), ls.Written)
	assert.Zero(t, ls.BufferFull+ls.Sampled+ls.HandlerErrors+ls.HandlerPanics)
}

// A sampler sees every coalesced record and drops those it refuses,
// counted; EveryNth keeps the first of each event and reason.
func TestSecurityLogSampler(t *testing.T) {
	run := func(opts SecurityLogOptions) SecurityLogStats {
		g := testGate(t, 32)
		var buf syncBuffer
		opts.Interval, opts.Buffer = time.Hour, 1<<16
		l := NewSecurityLog(g, slog.NewJSONHandler(&buf, nil), opts)
		script(t, g, nil)
		require.NoError(t, l.Close(context.Background()))
		return l.Stats()
	}
	all := run(SecurityLogOptions{})
	half := run(SecurityLogOptions{Sample: EveryNth(2)})
	require.Greater(t, all.Written, uint64(4))
	assert.Equal(t, all.Written, half.Written+half.Sampled)
	assert.Positive(t, half.Sampled)
	assert.Less(t, half.Written, all.Written)
}
