package gate_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/bench/gate"
)

// FuzzParseConfig: any input is a config or an error wrapping ErrConfig
// (or a YAML error), never a panic; a parsed config validates.
func FuzzParseConfig(f *testing.F) {
	f.Add("alpha: 0.05\nmin_effect: 5%\nrules:\n  - match: '^Floor/'\n    role: floor\n")
	f.Add("normalize: never\ncorrection: none\nunits: [sec/op]\n")
	f.Add("rules:\n  - match: '('\n")
	f.Fuzz(func(t *testing.T, in string) {
		c, err := gate.ParseConfig(strings.NewReader(in), "fuzz.yaml")
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
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
