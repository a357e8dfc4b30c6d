package reports_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/sluicedev/sluice/reports"
)

// The harness fills a Results once a variant has run, writes it, and the
// CLI renders it later from the file alone.
func Example() {
	run := reports.Run{
		Scenario: "smoke",
		Seed:     42,
		Driver:   reports.DriverSim,
		Duration: 10 * time.Second,
		Warmup:   2 * time.Second,
		Interval: time.Second,
		Complete: true,
	}
	r := reports.New(run, reports.CaptureEnvironment("v0.1.0"))

	v, err := r.AddVariant("default", map[string]any{"chat": map[string]int{"rate": 2, "burst": 5}})
	if err != nil {
		log.Fatal(err)
	}
	p := v.AddPopulation("players", "honest", reports.Honest, 10)
	chat := p.Kind("chat")
	chat.Sent, chat.Accepted = 160, 158
	chat.Drop("ChannelLimit", 2)

	// Latencies in ns, merged from the workers' histograms.
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	for i := int64(1); i <= 158; i++ {
		_ = h.RecordValue(i * int64(50*time.Microsecond))
	}
	if err := chat.AddHistogram(reports.ResponseTime, h); err != nil {
		log.Fatal(err)
	}
	for s := range 10 {
		start := time.Duration(s) * time.Second
		if err := p.AddInterval(start, time.Second, 16, 16, nil, h); err != nil {
			log.Fatal(err)
		}
	}
	if err := r.Finalize(); err != nil {
		log.Fatal(err)
	}
	// A drop rate is nil (with NoDropRate saying why) only for a
	// population that writes raw bytes.
	rate := *p.Summary.DropRate
	v.AddThreshold("players.drop_rate < 2%", rate, "", rate < 0.02)

	dir, err := os.MkdirTemp("", "sluice-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "results.json")
	if err := reports.WriteFile(path, r); err != nil {
		log.Fatal(err)
	}

	// Later, from the file alone.
	back, err := reports.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	var page bytes.Buffer
	if err := reports.WriteHTML(&page, back); err != nil {
		log.Fatal(err)
	}
	s := back.Variants[0].Populations[0].Summary
	fmt.Printf("drop rate %.4f, p50 %v, passed %v\n", *s.DropRate, time.Duration(s.ResponseP50), back.Variants[0].Passed())
	// Output: drop rate 0.0125, p50 3.950591ms, passed true
}
