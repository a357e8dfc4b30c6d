package trace

import (
	"cmp"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/sluicedev/sluice/core"
)

// Summary is what a trace holds, in totals: what `sluice trace inspect`
// prints. The zero value is an empty summary; Add records to it.
type Summary struct {
	Records  int64
	Sessions int64 // opens with a session
	Refused  int64 // opens refused
	Messages int64 // message and unchecked records
	Bytes    int64 // their sizes
	First    int64 // time of the first record
	Last     int64 // time of the last
	Lost     uint64
	// Kinds counts messages by kind name ("" for none).
	Kinds map[string]int64
	// Decisions counts messages by recorded decision.
	Decisions map[Decision]int64
	// Sizes counts messages by size: bucket i holds sizes in [2^(i-1), 2^i), bucket 0 size 0.
	Sizes [33]int64
	// PerSecond counts messages per second of trace time (at most
	// maxSeconds seconds; later ones land in the last).
	PerSecond []int64
	// Groups counts sessions by label group, Labels by label.
	Groups map[string]int64
	Labels [numLabels]int64
	bySess map[uint64]int64
}

const maxSeconds = 86400

// Add counts one record.
func (s *Summary) Add(r *Record) {
	if s.Kinds == nil {
		s.Kinds, s.Decisions, s.Groups, s.bySess = map[string]int64{}, map[Decision]int64{}, map[string]int64{}, map[uint64]int64{}
		s.First = r.Time
	}
	s.Records++
	s.Last = r.Time
	switch r.Op {
	case OpOpen:
		if r.Session != 0 {
			s.Sessions++
		} else {
			s.Refused++
		}
	case OpMessage, OpUnchecked:
		s.Messages++
		s.Bytes += int64(r.Size)
		s.Kinds[r.Kind]++
		s.Decisions[r.Decision]++
		s.Sizes[bits.Len32(r.Size)]++
		sec := min(int((r.Time-s.First)/int64(time.Second)), maxSeconds-1)
		for len(s.PerSecond) <= sec {
			s.PerSecond = append(s.PerSecond, 0)
		}
		s.PerSecond[sec]++
		s.bySess[r.Session]++
	case OpLabel:
		s.Groups[r.Group]++
		s.Labels[r.Label]++
	case OpLost:
		s.Lost += r.Lost
	}
}

// Summarize reads every record of r.
func Summarize(r *Reader) (*Summary, error) {
	s := &Summary{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		s.Add(rec)
	}
}

// TopSessions returns the n sessions that sent the most messages, most first.
func (s *Summary) TopSessions(n int) (sessions []uint64, messages []int64) {
	for id := range s.bySess {
		sessions = append(sessions, id)
	}
	slices.SortFunc(sessions, func(a, b uint64) int {
		if c := cmp.Compare(s.bySess[b], s.bySess[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	sessions = sessions[:min(n, len(sessions))]
	for _, id := range sessions {
		messages = append(messages, s.bySess[id])
	}
	return sessions, messages
}

// WriteText writes the summary for a person.
func (s *Summary) WriteText(w io.Writer, h Header) {
	dur := time.Duration(s.Last - s.First)
	fmt.Fprintf(w, "recorder   %s\norigin     %s\npolicy     %s\nhashed     %v\n", h.Recorder, h.Origin.Format(time.RFC3339Nano), orNone(h.PolicyDigest), h.Hashed)
	fmt.Fprintf(w, "records    %d over %v\nsessions   %d opened, %d refused\nmessages   %d (%d bytes)\nlost       %d records\n", s.Records, dur, s.Sessions, s.Refused, s.Messages, s.Bytes, s.Lost)
	if len(s.Groups) > 0 {
		fmt.Fprintf(w, "\nsessions by group (label counts: %d unknown, %d honest, %d hostile)\n", s.Labels[Unknown], s.Labels[Honest], s.Labels[Hostile])
		for _, g := range sortedKeys(s.Groups) {
			fmt.Fprintf(w, "  %-20s %d\n", orNone(g), s.Groups[g])
		}
	}
	fmt.Fprintf(w, "\nmessages by kind\n")
	for _, k := range sortedKeys(s.Kinds) {
		fmt.Fprintf(w, "  %-20s %d\n", orNone(k), s.Kinds[k])
	}
	fmt.Fprintf(w, "\ndecisions recorded\n")
	ds := make([]Decision, 0, len(s.Decisions))
	for d := range s.Decisions {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b Decision) int { return cmp.Compare(a.byte(), b.byte()) })
	for _, d := range ds {
		name := d.Action.String()
		if d.Reason != core.None {
			name += " " + d.Reason.String()
		}
		if d.Shadow {
			name += " (shadow)"
		}
		fmt.Fprintf(w, "  %-30s %d\n", name, s.Decisions[d])
	}
	fmt.Fprintf(w, "\nsizes (bytes)\n")
	for i, n := range s.Sizes {
		if n == 0 {
			continue
		}
		lo, hi := 0, 0
		if i > 0 {
			lo, hi = 1<<(i-1), 1<<i-1
		}
		fmt.Fprintf(w, "  %6d–%-6d %d\n", lo, hi, n)
	}
	if len(s.PerSecond) > 0 {
		fmt.Fprintf(w, "\nmessages per second (min / mean / max): ")
		lo, hi, sum := s.PerSecond[0], s.PerSecond[0], int64(0)
		for _, n := range s.PerSecond {
			lo, hi, sum = min(lo, n), max(hi, n), sum+n
		}
		fmt.Fprintf(w, "%d / %.0f / %d\n", lo, float64(sum)/float64(len(s.PerSecond)), hi)
		fmt.Fprintf(w, "  %s\n", sparkline(s.PerSecond, 60))
	}
	ids, counts := s.TopSessions(10)
	fmt.Fprintf(w, "\ntop sessions by messages\n")
	for i, id := range ids {
		fmt.Fprintf(w, "  session %-8d %d\n", id, counts[i])
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// sparkline draws counts in at most width columns of block characters.
func sparkline(counts []int64, width int) string {
	step := (len(counts) + width - 1) / width
	var cols []int64
	for i := 0; i < len(counts); i += step {
		var sum int64
		for _, n := range counts[i:min(i+step, len(counts))] {
			sum += n
		}
		cols = append(cols, sum)
	}
	hi := slices.Max(cols)
	const ramp = "▁▂▃▄▅▆▇█"
	runes := []rune(ramp)
	var b strings.Builder
	for _, n := range cols {
		i := 0
		if hi > 0 {
			i = int(n * int64(len(runes)-1) / hi)
		}
		b.WriteRune(runes[i])
	}
	return b.String()
}
