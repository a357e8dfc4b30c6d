package gate_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/bench/gate"
)

// FuzzParseConfig: any input is a config or an error wrapping ErrConfig,
// never a panic; a parsed config compares a set with itself without an
// error (but too few samples for its min_samples, or nothing compared when
// its units or rules leave nothing to gate) and finds no regression.
func FuzzParseConfig(f *testing.F) {
	f.Add("alpha: 0.05\nmin_effect: 5%\nrules:\n  - match: '^Floor/'\n    role: floor\n")
	f.Add("normalize: never\ncorrection: none\nunits: [sec/op]\n")
	f.Add("rules:\n  - match: '('\n")
	var lines strings.Builder
	for i := range 8 {
		fmt.Fprintf(&lines, "BenchmarkFloor/cas-2 100 %d ns/op\nBenchmarkBucket/pass/serial-2 100 %d ns/op 0 allocs/op\n", 3+i%2, 5+i%3)
	}
	set, err := gate.Read(strings.NewReader(lines.String()), "fixed")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := gate.ParseConfig(strings.NewReader(in), "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, gate.ErrConfig) {
				t.Fatalf("error does not wrap ErrConfig: %v", err)
			}
			return
		}
		rep, err := gate.Compare(set, set, c)
		switch {
		case errors.Is(err, gate.ErrTooFewSamples), errors.Is(err, gate.ErrNothingCompared):
		case err != nil:
			t.Fatalf("a parsed config cannot compare: %v", err)
		case rep.Regressed():
			t.Fatalf("a set regressed against itself under %q", in)
		}
	})
}

// FuzzCompare: any two inputs read as benchmark output compare without a
// panic, and the report writes as text and JSON.
func FuzzCompare(f *testing.F) {
	f.Add("BenchmarkFloor/cas-2 100 3 ns/op\nBenchmarkBucket/pass/serial-2 100 5 ns/op 0 allocs/op\n",
		"run: 1\nBenchmarkFloor/cas-2 100 3 ns/op\nBenchmarkBucket/pass/serial-2 100 6 ns/op 1 allocs/op\n")
	f.Add("BenchmarkX 1 NaN ns/op\n", "BenchmarkX 1 +Inf ns/op\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		base, err := gate.Read(strings.NewReader(a), "a")
		if err != nil {
			return
		}
		cand, err := gate.Read(strings.NewReader(b), "b")
		if err != nil {
			return
		}
		cfg := gate.DefaultConfig()
		cfg.MinSamples = 2
		rep, _ := gate.Compare(base, cand, cfg)
		if rep == nil {
			return
		}
		var out bytes.Buffer
		if err := rep.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
	})
}
