// Command ratios reads `go test -bench` output and prints, as Markdown, the
// median of every benchmark's ns/op (with the lowest and highest sample, and
// the medians of its other metrics), then the ratios of medians the project
// tracks for the peer comparison.
//
// Usage:
//
//	go run ./cmd/ratios out.txt [more.txt ...]   # or: ... | go run ./cmd/ratios
//
// Names are read without their -GOMAXPROCS suffix. A ratio whose
// numerator, or every candidate denominator, is missing from the input is
// printed as "n/a".
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// Ratio is Num's median ns/op over Den's: one name for a fixed
// denominator, or a name with "*" for its impl (as "Keyed/*/1m/serial"),
// which stands for every impl of the input whose name does not start with
// "sluice": the peers, of which the fastest is chosen and printed. Names
// are without "Benchmark" and -GOMAXPROCS.
type Ratio struct {
	Label string
	Num   string
	Den   string
}

// Tracked is the list of ratios the project watches. Lower is better for
// every one of them.
var Tracked = []Ratio{
	// sluice-at is handed the caller's clock, and so is xrate-at (AllowN);
	// sluice and xrate read their own.
	{"sluice-at pass / xrate-at pass", "OneBucket/sluice-at/pass/serial", "OneBucket/xrate-at/pass/serial"},
	{"sluice-at pass / Floor/cas", "OneBucket/sluice-at/pass/serial", "Floor/cas"},
	{"sluice-at pass / Floor/cas-call", "OneBucket/sluice-at/pass/serial", "Floor/cas-call"},
	{"Floor/cas-call / Floor/cas", "Floor/cas-call", "Floor/cas"},
	{"sluice-at deny / xrate-at deny", "OneBucket/sluice-at/deny/serial", "OneBucket/xrate-at/deny/serial"},
	{"sluice pass / xrate pass", "OneBucket/sluice/pass/serial", "OneBucket/xrate/pass/serial"},
	{"sluice-coarse pass / xrate pass", "OneBucket/sluice-coarse/pass/serial", "OneBucket/xrate/pass/serial"},
	{"parallel deny sluice-at / xrate-at", "OneBucket/sluice-at/deny/parallel", "OneBucket/xrate-at/deny/parallel"},
	{"parallel pass sluice-at / juju", "OneBucket/sluice-at/pass/parallel", "OneBucket/juju/pass/parallel"},
	{"keyed 1m sluice-at / Floor/map1m", "Keyed/sluice-at/1m/serial", "Floor/map1m"},
	{"keyed 1m sluice-at / fastest peer", "Keyed/sluice-at/1m/serial", "Keyed/*/1m/serial"},
	{"keyed 1k sluice-at / Floor/map1k", "Keyed/sluice-at/1k/serial", "Floor/map1k"},
	{"keyed 1m sluice-at parallel / serial", "Keyed/sluice-at/1m/parallel", "Keyed/sluice-at/1m/serial"},
	// Batched takes (core.Limiter.TakeBatchAt), per key.
	{"keyed 1m sluice-batch64 / Floor/map1m", "Keyed/sluice-batch64/1m/serial", "Floor/map1m"},
	{"keyed 1m sluice-batch64 / fastest peer", "Keyed/sluice-batch64/1m/serial", "Keyed/*/1m/serial"},
	{"keyed 1m sluice-batch64 / sluice-at", "Keyed/sluice-batch64/1m/serial", "Keyed/sluice-at/1m/serial"},
	{"keyed 1k sluice-batch64 / sluice-at", "Keyed/sluice-batch64/1k/serial", "Keyed/sluice-at/1k/serial"},
	// Strict mode against redis_rate on one redis-server, 64 callers
	// (issue target: at most 1/3, 3× the takes per second).
	{"strict 64 callers sluice / redis_rate", "Strict/sluice/64", "Strict/redis_rate/64"},
}

// TrackedCPU is the ratios the project watches in CPU time (cpu-ns/op, the
// serial drivers' thread CPU time), for runs on a loaded machine, where wall
// time counts the time a benchmark was descheduled.
var TrackedCPU = []Ratio{
	{"keyed 1m sluice-at / Floor/map1m", "Keyed/sluice-at/1m/serial", "Floor/map1m"},
	{"keyed 1m sluice-batch64 / Floor/map1m", "Keyed/sluice-batch64/1m/serial", "Floor/map1m"},
	{"keyed 1m sluice-batch64 / fastest peer", "Keyed/sluice-batch64/1m/serial", "Keyed/*/1m/serial"},
	{"keyed 1m sluice-batch64 / sluice-at", "Keyed/sluice-batch64/1m/serial", "Keyed/sluice-at/1m/serial"},
	{"keyed 1k sluice-batch64 / sluice-at", "Keyed/sluice-batch64/1k/serial", "Keyed/sluice-at/1k/serial"},
}

// denominators returns r's Den, or for a Den with "*" for its impl the
// names of s that match it with a peer's impl.
func (s *Summary) denominators(r Ratio) []string {
	pre, post, wild := strings.Cut(r.Den, "/*/")
	if !wild {
		return []string{r.Den}
	}
	var names []string
	for _, name := range s.Names {
		impl, okPre := strings.CutPrefix(name, pre+"/")
		impl, okPost := strings.CutSuffix(impl, "/"+post)
		if okPre && okPost && impl != "" && !strings.Contains(impl, "/") && !strings.HasPrefix(impl, "sluice") {
			names = append(names, name)
		}
	}
	return names
}

// Summary is the samples of every benchmark and metric read, by name and
// unit, in the order the names first appeared.
type Summary struct {
	Names   []string
	Samples map[string]map[string][]float64 // name -> unit -> values
}

// Read parses benchmark output. ns/op is kept as "ns/op" (benchfmt tidies
// it to sec/op); other units are kept as written.
func Read(r io.Reader, fileName string) (*Summary, error) {
	s := &Summary{Samples: map[string]map[string][]float64{}}
	if err := s.add(r, fileName); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Summary) add(r io.Reader, fileName string) error {
	br := benchfmt.NewReader(r, fileName)
	for br.Scan() {
		switch rec := br.Result(); rec := rec.(type) {
		case *benchfmt.SyntaxError:
			// Non-benchmark lines that look like results; report and go on.
			fmt.Fprintln(os.Stderr, "ratios:", rec)
		case *benchfmt.Result:
			name := trimProcs(rec.Name)
			units := s.Samples[name]
			if units == nil {
				units = map[string][]float64{}
				s.Samples[name] = units
				s.Names = append(s.Names, name)
			}
			for _, v := range rec.Values {
				unit, val := v.Unit, v.Value
				// benchfmt reads "ns/op" and every "...-ns/op" (cpu-ns/op,
				// redis-cpu-ns/op) as seconds.
				if strings.HasSuffix(unit, "sec/op") {
					unit, val = strings.TrimSuffix(unit, "sec/op")+"ns/op", val*1e9
				}
				units[unit] = append(units[unit], val)
			}
		}
	}
	return br.Err()
}

// trimProcs returns the name without its -GOMAXPROCS suffix.
func trimProcs(n benchfmt.Name) string {
	base, parts := n.Parts()
	var sb strings.Builder
	sb.Write(base)
	for _, p := range parts {
		if len(p) > 0 && p[0] == '-' {
			continue
		}
		sb.Write(p)
	}
	return sb.String()
}

// Median returns the median of the samples of name in unit.
func (s *Summary) Median(name, unit string) (float64, int, bool) {
	vs := s.Samples[name][unit]
	if len(vs) == 0 {
		return 0, 0, false
	}
	return median(vs), len(vs), true
}

func median(vs []float64) float64 {
	c := slices.Clone(vs)
	slices.Sort(c)
	m := len(c) / 2
	if len(c)%2 == 1 {
		return c[m]
	}
	return (c[m-1] + c[m]) / 2
}

// RatioOf returns the ratio r tracks and the denominator it chose.
func (s *Summary) RatioOf(r Ratio) (ratio float64, den string, ok bool) {
	return s.ratioIn(r, "ns/op")
}

// ratioIn is RatioOf of the medians in unit.
func (s *Summary) ratioIn(r Ratio, unit string) (ratio float64, den string, ok bool) {
	num, _, ok := s.Median(r.Num, unit)
	if !ok {
		return 0, "", false
	}
	var least float64
	for _, name := range s.denominators(r) {
		if m, _, ok := s.Median(name, unit); ok && (den == "" || m < least) {
			least, den = m, name
		}
	}
	if least == 0 { // no denominator in the input, or one of 0 ns
		return 0, "", false
	}
	return num / least, den, true
}

// Write prints the medians table and the tracked ratios as Markdown.
func (s *Summary) Write(w io.Writer) {
	fmt.Fprintln(w, "| benchmark | n | median ns/op | ns/op range | median B/op | median allocs/op | other medians |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, name := range s.Names {
		cell := func(unit, format string) string {
			if m, _, ok := s.Median(name, unit); ok {
				return fmt.Sprintf(format, m)
			}
			return ""
		}
		n := len(s.Samples[name]["ns/op"])
		if n == 0 {
			for _, vs := range s.Samples[name] {
				n = max(n, len(vs))
			}
		}
		var other []string
		var units []string
		for u := range s.Samples[name] {
			if u != "ns/op" && u != "B/op" && u != "allocs/op" {
				units = append(units, u)
			}
		}
		slices.Sort(units)
		for _, u := range units {
			m, _, _ := s.Median(name, u)
			other = append(other, fmt.Sprintf("%.1f %s", m, u))
		}
		var spread string
		if vs := s.Samples[name]["ns/op"]; len(vs) > 0 {
			spread = fmt.Sprintf("%.2f–%.2f", slices.Min(vs), slices.Max(vs))
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s |\n", name, n,
			cell("ns/op", "%.2f"), spread, cell("B/op", "%.0f"), cell("allocs/op", "%.0f"), strings.Join(other, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| ratio (of medians, ns/op) | value |")
	fmt.Fprintln(w, "| --- | ---: |")
	for _, r := range Tracked {
		if v, den, ok := s.RatioOf(r); ok && den != r.Den { // a peer chosen for "*"
			fmt.Fprintf(w, "| %s | %.4f (%s) |\n", r.Label, v, den)
		} else if ok {
			fmt.Fprintf(w, "| %s | %.4f |\n", r.Label, v)
		} else {
			fmt.Fprintf(w, "| %s | n/a |\n", r.Label)
		}
	}
	var cpu []string
	for _, r := range TrackedCPU {
		if v, den, ok := s.ratioIn(r, "cpu-ns/op"); ok && den != r.Den {
			cpu = append(cpu, fmt.Sprintf("| %s | %.4f (%s) |", r.Label, v, den))
		} else if ok {
			cpu = append(cpu, fmt.Sprintf("| %s | %.4f |", r.Label, v))
		}
	}
	if len(cpu) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| ratio (of medians, cpu-ns/op) | value |")
		fmt.Fprintln(w, "| --- | ---: |")
		for _, l := range cpu {
			fmt.Fprintln(w, l)
		}
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	s := &Summary{Samples: map[string]map[string][]float64{}}
	if len(args) == 0 {
		if err := s.add(stdin, "<stdin>"); err != nil {
			return err
		}
	}
	for _, path := range args {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = s.add(f, path)
		f.Close()
		if err != nil {
			return err
		}
	}
	if len(s.Names) == 0 {
		return errors.New("no benchmark results in the input")
	}
	s.Write(stdout)
	return nil
}

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
}
