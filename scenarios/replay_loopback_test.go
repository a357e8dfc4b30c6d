package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/reports"
	"github.com/stretchr/testify/require"
)

// serverDecisions returns a population's decisions by kind and reason
// ("accepted" or a core reason): what the server decided, not what the
// client saw.
func serverDecisions(p *reports.Population) map[string]int64 {
	out := map[string]int64{}
	for _, k := range p.Kinds {
		if k.IsSessions() {
			continue
		}
		if k.Accepted != 0 {
			out[k.Kind+" accepted"] = k.Accepted
		}
		for reason, n := range k.Drops {
			if _, err := core.ParseReason(reason); err == nil {
				out[k.Kind+" "+reason] = n
			}
		}
	}
	return out
}

// replay-compare on the loopback driver: each traced session a client of
// its own over a real socket, from its own 127.x.y.z, beside the synthetic
// flood. Every traced population's decisions, honest and hostile, by
// kind and reason, agree with the sim's replay of the same window (within
// 2%, or one client event), under each of the three policies (a variant
// whose load generator fell behind its schedule on a loaded machine is
// invalid, and its counts are not compared).
func TestReplayCompareOnLoopbackAgreesWithSim(t *testing.T) {
	if testing.Short() {
		t.Skip("replays 6 s of a trace three times over loopback sockets")
	}
	s, err := Load("replay-compare.yaml")
	require.NoError(t, err)
	opt := Options{Duration: 6 * time.Second}
	so, lo := runSimAndLoopback(t, s, opt)
	require.Equal(t, "loopback", lo.Results.Run.Driver)
	compared := 0
	for i, lv := range lo.Results.Variants {
		sv := so.Results.Variants[i]
		if why := notComparable(lv); why != "" {
			t.Logf("variant %s: counts not compared: %s", lv.Name, why)
			continue
		}
		compared++
		for _, lp := range lv.Populations {
			sp := sv.Population(lp.Name)
			require.NotNil(t, sp)
			if lp.Name == "synthetic-flood" {
				// Not a replay: its traffic is the loopback clients' own.
				require.Greater(t, lp.Clients, 0)
				continue
			}
			require.Equal(t, sp.Clients, lp.Clients, "variant %s %s: one client per traced session", lv.Name, lp.Name)
			l, m := serverDecisions(lp), serverDecisions(sp)
			for key, want := range m {
				got := l[key]
				t.Logf("%s %s %s: sim %d loopback %d", lv.Name, lp.Name, key, want, got)
				// The matrix's rule (agree): 2%, or one client event (seen:
				// strict laggy move ChannelLimit 20 against 19). The traced
				// floods too: their bursts follow their logins within a
				// round trip, and go out unanswered, as recorded (see
				// TestTraceLoopbackSendsBeforeLoginAnswer in loadgen).
				require.True(t, agree(got, want, 0),
					"variant %s %s %s: loopback %d, sim %d", lv.Name, lp.Name, key, got, want)
			}
			for key, got := range l {
				if _, ok := m[key]; !ok {
					require.Zero(t, got, fmt.Sprintf("variant %s %s %s: loopback only", lv.Name, lp.Name, key))
				}
			}
		}
	}
	t.Logf("%d of %d variants compared", compared, len(lo.Results.Variants))
}
