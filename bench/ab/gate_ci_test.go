package ab_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicedev/sluice/bench/ab"
	"github.com/sluicedev/sluice/bench/gate"
)

// The benchmark gate as a test entry point, for CI and for people without
// the CLI at hand (bench/README.md): it runs only when given one of these
// flags after -args, and is skipped otherwise.
var (
	gateBase     = flag.String("gate.base", "", "gate the working tree against this git revision, interleaved (sluice bench ab --base)")
	gateBaseline = flag.String("gate.baseline", "", "gate the working tree's quick set against this baseline file (sluice gate)")
	gateRecord   = flag.String("gate.record", "", "write a baseline of the working tree's quick set to this file")
	gateCount    = flag.Int("gate.count", ab.DefaultCount, "samples per side")
	gateTime     = flag.String("gate.benchtime", ab.DefaultBenchTime, "-test.benchtime of each sample")
	gateBench    = flag.String("gate.bench", ab.DefaultBench, "-test.bench regexp")
	gateTags     = flag.String("gate.tags", "", "comma-separated build tags of the working tree's side (sluice_slow20 injects a 20% slowdown)")
	gateJSON     = flag.String("gate.json", "", "also write the report as JSON to this file")
	gateSave     = flag.String("gate.save", "", "keep each side's samples (base.txt, cand.txt) in this directory")
)

// TestBenchGate is `sluice bench ab` / `sluice gate` / a baseline refresh
// run by go test:
//
//	go test ./bench/ab -run '^TestBenchGate$' -count=1 -v -args -gate.base HEAD
//	go test ./bench/ab -run '^TestBenchGate$' -count=1 -v -args -gate.baseline bench/baseline/quick.txt
//	go test ./bench/ab -run '^TestBenchGate$' -count=1 -v -args -gate.record bench/baseline/quick.txt
//
// Paths are relative to the module root. It fails on a regression, on too
// few samples, and on any error.
func TestBenchGate(t *testing.T) {
	if *gateBase == "" && *gateBaseline == "" && *gateRecord == "" {
		t.Skip("runs only with -gate.base, -gate.baseline or -gate.record after -args (see bench/README.md)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	var tags []string
	if *gateTags != "" {
		tags = strings.Split(*gateTags, ",")
	}
	ctx := context.Background()
	progress := testWriter{t}

	var rep *gate.Report
	switch {
	case *gateRecord != "":
		f, err := os.Create(abs(*gateRecord))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		err = ab.Record(ctx, ab.RecordConfig{Dir: root, Count: *gateCount, BenchTime: *gateTime, Bench: *gateBench, Tags: tags, Out: f, Progress: progress})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", *gateRecord)
		return
	case *gateBase != "":
		rep, err = ab.Run(ctx, ab.Config{BaseRev: *gateBase, Dir: root, Count: *gateCount, BenchTime: *gateTime,
			Bench: *gateBench, CandTags: tags, SaveDir: saveDir(abs), Progress: progress})
	default:
		rep, err = againstBaseline(ctx, abs(*gateBaseline), root, tags, saveDir(abs), progress)
	}
	if rep != nil {
		var b strings.Builder
		rep.WriteText(&b)
		t.Log("\n" + b.String())
		if *gateJSON != "" {
			f, ferr := os.Create(abs(*gateJSON))
			if ferr != nil {
				t.Fatal(ferr)
			}
			defer f.Close()
			if ferr := rep.WriteJSON(f); ferr != nil {
				t.Fatal(ferr)
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if rep.Regressed() {
		t.Fatalf("%d regression(s)", len(rep.Regressions()))
	}
}

func saveDir(abs func(string) string) string {
	if *gateSave == "" {
		return ""
	}
	return abs(*gateSave)
}

// againstBaseline records the working tree's samples as Record does and
// compares them with the baseline file.
func againstBaseline(ctx context.Context, baseline, root string, tags []string, save string, progress testWriter) (*gate.Report, error) {
	base, err := gate.ReadFiles(baseline)
	if err != nil {
		return nil, err
	}
	var cand strings.Builder
	err = ab.Record(ctx, ab.RecordConfig{Dir: root, Count: *gateCount, BenchTime: *gateTime, Bench: *gateBench, Tags: tags, Out: &cand, Progress: progress})
	if err != nil {
		return nil, err
	}
	if save != "" {
		if err := os.MkdirAll(save, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(save, "cand.txt"), []byte(cand.String()), 0o644); err != nil {
			return nil, err
		}
	}
	cs, err := gate.Read(strings.NewReader(cand.String()), "working tree")
	if err != nil {
		return nil, err
	}
	return gate.Compare(base, cs, gate.DefaultConfig())
}

// testWriter sends progress lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
