package scenarios

import (
	"maps"

	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/reports"
)

// serverView copies a run's server view into its report's (nil for none).
// Empty maps stay nil, as a results file read back has them.
func serverView(sv *record.ServerView) *reports.ServerView {
	if sv == nil {
		return nil
	}
	w := &sv.Window
	out := &reports.ServerView{
		Window: reports.ServerCounts{
			Actions:     nonEmpty(w.Actions),
			Floods:      nonEmpty(w.Floods),
			FloodBytes:  nonEmpty(w.FloodBytes),
			FloodsTotal: w.FloodsTotal,
			StageRises:  nonEmpty(w.StageRises),
			Lockouts:    w.Lockouts,
			TableFull:   w.TableFull,
			Shadowed:    w.Shadowed,
		},
		Check: reports.ServerCheck{Made: sv.Check.Made, Why: sv.Check.Why, Agree: sv.Check.Agree},
	}
	if len(w.Messages) > 0 {
		out.Window.Messages = make(map[string]map[string]int64, len(w.Messages))
		for row, m := range w.Messages {
			out.Window.Messages[row] = maps.Clone(m)
		}
	}
	for _, r := range sv.Check.Rows {
		out.Check.Rows = append(out.Check.Rows, reports.ServerCheckRow{
			Gate: r.Gate, Server: r.Server, Reason: r.Reason,
			GateCount: r.GateCount, Populations: r.Populations, BeforeHello: r.BeforeHello,
			Compared: r.Compared, Note: r.Note,
		})
	}
	return out
}

func nonEmpty(m map[string]int64) map[string]int64 {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
