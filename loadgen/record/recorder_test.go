package record

import (
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecorderRunsAreRecords checks that the recorder's runs of equal
// values leave every histogram exactly as one RecordValue per record
// would, whatever is read when.
func TestRecorderRunsAreRecords(t *testing.T) {
	cfg := HistConfig{}.withDefaults()
	rec, err := NewRecorder([]string{"a", "b"}, HistConfig{})
	require.NoError(t, err)
	want := map[[3]int]*hdrhistogram.Histogram{}
	r := behave.NewRand(3)
	for i := range 20_000 {
		pop, k, m := r.Intn(2), behave.Kind(r.Intn(int(behave.NumKinds))), Metric(r.Intn(int(NumMetrics)))
		var v int64
		switch r.Intn(4) {
		case 0, 1:
			v = 0 // long runs
		case 2:
			v = r.Between(-5, 5)
		default:
			v = r.Between(0, 2*cfg.Highest)
		}
		rec.Record(pop, k, m, v)
		key := [3]int{pop, int(k), int(m)}
		if want[key] == nil {
			want[key] = hdrhistogram.New(cfg.Lowest, cfg.Highest, cfg.Digits)
		}
		require.NoError(t, want[key].RecordValue(min(max(v, 0), cfg.Highest)))
		if i%997 == 0 {
			// A read in the middle sees every record so far.
			require.True(t, want[key].Equals(rec.Histogram(pop, k, m)))
		}
	}
	for pop := range 2 {
		for k := range behave.NumKinds {
			for m := range NumMetrics {
				w, got := want[[3]int{pop, int(k), int(m)}], rec.Histogram(pop, k, m)
				if w == nil {
					assert.Nil(t, got)
					continue
				}
				require.NotNil(t, got)
				assert.True(t, w.Equals(got), "pop %d %v %v", pop, k, m)
				assert.Equal(t, w.TotalCount(), got.TotalCount())
			}
		}
	}
	assert.Zero(t, rec.TotalDropped())

	// A merge sees the runs of both sides.
	other, err := NewRecorder([]string{"a", "b"}, HistConfig{})
	require.NoError(t, err)
	for range 10 {
		other.Record(0, behave.KindPing, Response, 7)
	}
	before := rec.Histogram(0, behave.KindPing, Response).TotalCount()
	rec.Record(0, behave.KindPing, Response, 7)
	require.NoError(t, rec.Merge(other))
	assert.Equal(t, before+11, rec.Histogram(0, behave.KindPing, Response).TotalCount())
}
