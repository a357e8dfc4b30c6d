package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/sluicedev/sluice/bench/peers
BenchmarkOneBucket/sluice-at/pass/serial-2     	100	 4.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkOneBucket/sluice-at/pass/serial-2     	100	 6.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkOneBucket/sluice-at/pass/serial-2     	100	 5.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkOneBucket/xrate/pass/serial-2         	100	90.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkOneBucket/xrate-at/pass/serial-2      	100	40.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkOneBucket/xrate-at/pass/serial-2      	100	60.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkOneBucket/sluice/pass/serial-2        	100	 9.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkFloor/cas-2                           	100	 2.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkFloor/map1m-2                         	100	80.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkKeyed/sluice-at/1m/serial-2           	100	120.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkKeyed/xrate-map/1m/serial-2           	100	600.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkKeyed/sethvargo/1m/serial-2           	100	480.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkKeyed/ulule/1m/serial-2               	100	900.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkMemory/map-floor/1m-2                 	  1	       40.5 bytes/key	 0 B/op	 0 allocs/op
PASS
`

func TestMediansAndRatios(t *testing.T) {
	s, err := Read(strings.NewReader(sample), "sample")
	if err != nil {
		t.Fatal(err)
	}
	if m, n, _ := s.Median("OneBucket/sluice-at/pass/serial", "ns/op"); m != 5 || n != 3 {
		t.Errorf("median = %v over %d, want 5 over 3", m, n)
	}
	if m, _, _ := s.Median("OneBucket/xrate-at/pass/serial", "ns/op"); m != 50 {
		t.Errorf("even-count median = %v, want 50", m)
	}
	if m, _, _ := s.Median("Memory/map-floor/1m", "bytes/key"); m != 40.5 {
		t.Errorf("bytes/key median = %v, want 40.5", m)
	}
	check := func(label string, want float64, wantOK bool) {
		t.Helper()
		got, _, ok := s.RatioOf(tracked(t, label))
		if ok != wantOK || (ok && math.Abs(got-want) > 1e-12) {
			t.Errorf("%s = %v, %v; want %v, %v", label, got, ok, want, wantOK)
		}
	}
	check("sluice-at pass / xrate-at pass", 0.1, true) // both on the caller's clock
	check("sluice pass / xrate pass", 0.1, true)       // both on their own
	check("sluice-at pass / Floor/cas", 2.5, true)
	check("sluice-at deny / xrate-at deny", 0, false)
	check("keyed 1m sluice-at / Floor/map1m", 1.5, true)
	check("keyed 1m sluice-at / fastest peer", 0.25, true) // sethvargo's 480, the lowest of three present
	check("keyed 1k sluice-at / Floor/map1k", 0, false)

	var out bytes.Buffer
	if err := run(nil, strings.NewReader(sample), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| OneBucket/sluice-at/pass/serial | 3 | 5.00 | 4.00–6.00 | 0 | 0 |", "| sluice-at pass / xrate-at pass | 0.1000 |", "| sluice-at deny / xrate-at deny | n/a |", "| keyed 1m sluice-at / fastest peer | 0.2500 (Keyed/sethvargo/1m/serial) |", "40.5 bytes/key"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// The fastest peer is drawn from the input, not from a list: a peer the
// tool has never heard of counts, sluice's own impls and other sizes and
// modes do not.
func TestFastestPeerComesFromTheInput(t *testing.T) {
	in := `BenchmarkKeyed/sluice-at/1m/serial-2  100  120.0 ns/op
BenchmarkKeyed/sluice/1m/serial-2     100   60.0 ns/op
BenchmarkKeyed/newpeer/1k/serial-2    100   10.0 ns/op
BenchmarkKeyed/newpeer/1m/parallel-2  100   20.0 ns/op
BenchmarkKeyed/xrate-map/1m/serial-2  100  600.0 ns/op
BenchmarkKeyed/newpeer/1m/serial-2    100  400.0 ns/op
`
	s, err := Read(strings.NewReader(in), "in")
	if err != nil {
		t.Fatal(err)
	}
	got, den, ok := s.RatioOf(tracked(t, "keyed 1m sluice-at / fastest peer"))
	if !ok || den != "Keyed/newpeer/1m/serial" || math.Abs(got-0.3) > 1e-12 {
		t.Errorf("= %v over %q (%v), want 0.3 over Keyed/newpeer/1m/serial", got, den, ok)
	}
	// Its numerator is here, its one fixed denominator is not: n/a.
	if got, den, ok := s.RatioOf(tracked(t, "keyed 1m sluice-at / Floor/map1m")); ok {
		t.Errorf("without Floor/map1m: %v over %q, want n/a", got, den)
	}
}

// tracked returns the tracked ratio labelled label.
func tracked(t *testing.T, label string) Ratio {
	t.Helper()
	for _, r := range Tracked {
		if r.Label == label {
			return r
		}
	}
	t.Fatalf("no tracked ratio %q", label)
	return Ratio{}
}
