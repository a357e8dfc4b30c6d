package bench

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/metrics"
)

// scrapeContinuously attaches a metrics.GateCollector to g and starts a
// goroutine that gathers a registry holding it, one scrape after another,
// until the returned stop is called; stop reports the scrapes per op.
// Gate/accept-scraped runs Gate/accept's loop beside it, so the two show
// what an attached, scraped collector costs a Check (nothing, by design:
// a scrape only reads the striped counters).
func scrapeContinuously(b *testing.B, g *core.Gate) (stop func()) {
	c := metrics.NewGateCollector(g, metrics.GateCollectorOptions{Now: func() int64 { return 0 }})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		b.Fatal(err)
	}
	var done atomic.Bool
	var scrapes atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			if _, err := reg.Gather(); err != nil {
				b.Error(err)
				return
			}
			scrapes.Add(1)
		}
	})
	return func() {
		done.Store(true)
		wg.Wait()
		c.Close()
		if b.N > 0 {
			b.ReportMetric(float64(scrapes.Load())/float64(b.N), "scrapes/op")
		}
	}
}
