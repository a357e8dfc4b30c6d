package record

import (
	"fmt"
	"time"

	"github.com/sluicedev/sluice/loadgen/behave"
)

// ServerCounts is what one game server of a run Admitted: per population,
// the frames of the kinds clients send as inputs and requests (move,
// ability, chat, purchase) that its gate accepted, in the measured window
// (after the warm-up), and per Series interval over the whole run. The
// fleet-wide count is the sum over the servers.
type ServerCounts struct {
	Name     string
	Admitted []int64   // by population
	Series   [][]int64 // [population][interval]
}

// Admitted is the per-server count of a fleet run (see ServerCounts).
type Admitted struct {
	warmup, interval int64
	Servers          []ServerCounts
}

func NewAdmitted(n, pops int, warmup, interval, duration time.Duration) *Admitted {
	a := &Admitted{warmup: int64(warmup), interval: int64(interval)}
	points := int((duration + interval - 1) / interval)
	for i := range n {
		sc := ServerCounts{Name: fmt.Sprintf("server-%d", i), Admitted: make([]int64, pops), Series: make([][]int64, pops)}
		for p := range sc.Series {
			sc.Series[p] = make([]int64, points)
		}
		a.Servers = append(a.Servers, sc)
	}
	return a
}

// GameKind reports whether k is sent as an input or a request.
func GameKind(k behave.Kind) bool { return k >= behave.KindMove && k <= behave.KindPurchase }

// add counts n frames of kind k of population pop that server accepted at
// at.
func (a *Admitted) Add(server, pop int, k behave.Kind, at, n int64) {
	if !GameKind(k) || pop < 0 || pop >= len(a.Servers[server].Admitted) {
		return
	}
	sc := &a.Servers[server]
	if at >= a.warmup {
		sc.Admitted[pop] += n
	}
	s := sc.Series[pop]
	if len(s) > 0 {
		s[min(max(at/a.interval, 0), int64(len(s)-1))] += n
	}
}
