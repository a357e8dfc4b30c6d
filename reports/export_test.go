package reports

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

type hgrmRow struct {
	value      float64 // ms
	percentile float64 // 0..1
	count      int64
}

// parseHGRM reads HdrHistogram's percentile-distribution text: the header,
// the rows, and the footer's total count.
func parseHGRM(t *testing.T, text string) (rows []hgrmRow, total int64) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(text))
	total = -1
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "", strings.HasPrefix(line, "Value"):
			continue
		case strings.HasPrefix(line, "#[Max"):
			i := strings.Index(line, "Total count")
			f := strings.Trim(strings.TrimSpace(line[i+len("Total count"):]), "= ]")
			n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("footer %q: %v", line, err)
			}
			total = n
			continue
		case strings.HasPrefix(line, "#"):
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("row %q has %d fields", line, len(f))
		}
		v, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.ParseFloat(f[1], 64)
		c, err3 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("row %q: %v", line, err)
		}
		if f[3] != "inf" {
			inv, err := strconv.ParseFloat(f[3], 64)
			// p is printed with six decimals: allow for its rounding.
			if err != nil || math.Abs(inv-1/(1-p)) > inv*(0.01+5e-7/(1-p))+0.01 {
				t.Fatalf("row %q: 1/(1-p) column %q disagrees", line, f[3])
			}
		}
		rows = append(rows, hgrmRow{v, p, c})
	}
	return rows, total
}

func TestHGRMParsesBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	raw := make([]int64, 50_000)
	h := hdrhistogram.New(1, int64(60e9), 3)
	for i := range raw {
		raw[i] = lognormal(rng, 3e6, 0.8)
		if err := h.RecordValue(raw[i]); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(raw)
	rh, err := NewHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHGRM(&b, rh); err != nil {
		t.Fatal(err)
	}
	rows, total := parseHGRM(t, b.String())
	if total != int64(len(raw)) {
		t.Fatalf("footer total %d, want %d", total, len(raw))
	}
	if len(rows) < 20 {
		t.Fatalf("only %d rows", len(rows))
	}
	n := float64(len(raw))
	// 3 significant digits: a bucket spans at most 1/1024 of its value
	// (HdrHistogram rounds 10^3 up to a power of two), and the text keeps
	// 1 µs (0.001 ms) of resolution.
	const rel = 2.0 / 1024
	for _, r := range rows {
		v := r.value * HGRMValueScale
		lo := v*(1-rel) - 1000
		hi := v*(1+rel) + 1000
		below := float64(countBelow(raw, int64(lo)))
		atMost := float64(countBelow(raw, int64(hi)+1))
		// The true share of samples at or under the value brackets the
		// row's percentile (printed with six decimals).
		if r.percentile < below/n-1e-6 || r.percentile > atMost/n+1e-6 {
			t.Errorf("row %.3f ms at p=%f: the samples put that value between p=%f and p=%f", r.value, r.percentile, below/n, atMost/n)
		}
		if c := float64(r.count); c < below || c > atMost {
			t.Errorf("row %.3f ms: count %d outside [%v, %v]", r.value, r.count, below, atMost)
		}
	}
	// The precomputed percentiles match the text's rows within precision.
	for _, q := range []struct {
		p float64
		v int64
	}{{0.5, rh.P50}, {0.9, rh.P90}, {0.99, rh.P99}, {0.999, rh.P999}, {1, rh.Max}} {
		i := slices.IndexFunc(rows, func(r hgrmRow) bool { return r.percentile >= q.p-1e-9 })
		if i < 0 {
			t.Fatalf("no row at p=%v", q.p)
		}
		// The rows sample the distribution at tick percentiles: the value
		// at q lies between the rows around q.
		hi := rows[i].value*HGRMValueScale*(1+rel) + 1000
		lo := hi
		if i > 0 {
			lo = rows[i-1].value*HGRMValueScale*(1-rel) - 1000
		}
		if rows[i].percentile == q.p || i == 0 {
			lo = rows[i].value*HGRMValueScale*(1-rel) - 1000
		}
		if v := float64(q.v); v < lo || v > hi {
			t.Errorf("p=%v: Quantiles say %d ns, hgrm rows put it in [%.0f, %.0f] ns", q.p, q.v, lo, hi)
		}
	}
	if last := rows[len(rows)-1]; last.percentile != 1 || math.Abs(last.value*HGRMValueScale-float64(raw[len(raw)-1])) > float64(raw[len(raw)-1])*rel+1000 {
		t.Errorf("last row %+v, max sample %d", last, raw[len(raw)-1])
	}
}

// countBelow returns how many of the sorted values are < v.
func countBelow(sorted []int64, v int64) int {
	i, _ := slices.BinarySearch(sorted, v)
	return i
}

func TestHlogReadsBack(t *testing.T) {
	r := synthCopy(t, 1)
	v := r.Variants[0]
	p := v.Populations[1]
	var b bytes.Buffer
	if err := WriteHlog(&b, v, p); err != nil {
		t.Fatal(err)
	}
	rd := hdrhistogram.NewHistogramLogReader(&b)
	i := 0
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		iv := p.Series[i]
		if h.TotalCount() != iv.Responses {
			t.Fatalf("interval %d: %d values, want %d", i, h.TotalCount(), iv.Responses)
		}
		q := Percentiles(h)
		if q.P50 != iv.P50 || q.P99 != iv.P99 {
			t.Fatalf("interval %d: p50 %d p99 %d, want %d %d", i, q.P50, q.P99, iv.P50, iv.P99)
		}
		if h.StartTimeMs() != iv.Start.Milliseconds() {
			t.Fatalf("interval %d starts at %d ms, want %d", i, h.StartTimeMs(), iv.Start.Milliseconds())
		}
		i++
	}
	if i != len(p.Series) {
		t.Fatalf("read %d intervals, want %d", i, len(p.Series))
	}
	if err := WriteHlog(&b, v, &Population{Name: "none"}); err == nil {
		t.Fatal("a population without interval histograms gave a log")
	}
}

func TestRenderFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	r := synthCopy(t, 1)
	if err := RenderFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatal("results.json differs from the results")
	}
	html, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil || !bytes.Contains(html, []byte(`id="comparison"`)) {
		t.Fatalf("report.html: %v", err)
	}
	for _, v := range r.Variants {
		for _, p := range v.Populations {
			for _, k := range p.Kinds {
				path := filepath.Join(dir, HDRDir, v.Name, p.Name+"."+k.Kind+".response_time.hgrm")
				b, err := os.ReadFile(path)
				if k.ResponseTime == nil || k.ResponseTime.Count == 0 {
					if err == nil {
						t.Errorf("%s written for an empty histogram", path)
					}
					continue
				}
				if err != nil {
					t.Error(err)
					continue
				}
				if _, total := parseHGRM(t, string(b)); total != k.ResponseTime.Count {
					t.Errorf("%s: total %d, want %d", path, total, k.ResponseTime.Count)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, HDRDir, v.Name, p.Name+".response_time.hlog")); err != nil {
				t.Error(err)
			}
		}
	}
	// No temporary files are left behind.
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNamer(t *testing.T) {
	n := newNamer()
	for in, want := range map[string]string{"players": "players", "../etc/passwd": "_._etc_passwd", "a b/c": "a_b_c", "": "_"} {
		if got := n.name(in); got != want {
			t.Errorf("name(%q) = %q, want %q", in, got, want)
		}
	}
	if a, b := n.name("x y"), n.name("x/y"); a == b {
		t.Errorf("two names both became %q", a)
	}
	if a, b := n.name("Case"), n.name("case"); strings.EqualFold(a, b) {
		t.Errorf("names differing only in case collide on case-insensitive file systems: %q, %q", a, b)
	}
}
