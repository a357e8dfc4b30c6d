package gate

import (
	"fmt"
	"slices"
	"time"
)

// MinSampleTime is the least time one sample should take to time: its
// iterations × its time per op. Below it the timer's resolution, the
// first iterations' warm-up (cold caches, a first allocation, the
// scheduler) and a single interruption outweigh the code measured, so
// two runs of the same commit can differ by half (at -benchtime 100x of
// a 500 ns op a sample times 50 µs). The gate warns of such samples: it
// does not refuse them, since a regression found on them may still be
// real, but it says that it may not be.
const MinSampleTime = 10 * time.Millisecond

// SampleRule states, in one sentence, how many samples the gate needs and
// how long each should time, given the fewest per side (min_samples). The
// help, the report and the documentation all say it in these words.
func SampleRule(minSamples int) string {
	return fmt.Sprintf("at least %d samples per side (go test -count %d or more), more when many benchmarks are compared "+
		"(enough for the U test to reach alpha over their number: the report says how many), each timing at least %v "+
		"(iterations × time per op: raise -benchtime if not)", minSamples, minSamples, MinSampleTime)
}

// shortSamples returns the median time one sample of the series took to
// time (iterations × sec/op), and whether it is under MinSampleTime; false
// when the series has no sec/op.
func shortSamples(sr *series) (time.Duration, bool) {
	if sr == nil || len(sr.timed) == 0 {
		return 0, false
	}
	d := time.Duration(median(slices.Clone(sr.timed)) * 1e9)
	return d, d < MinSampleTime
}
