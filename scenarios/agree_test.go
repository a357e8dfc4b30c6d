package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/internal/redisproc"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/reports"
)

// agreeFullEnv, set to 1, runs TestSimAgreesWithLoopback over every
// shipped scenario and transport (.ci/run does); without it the test runs
// each transport's representative scenario only, to keep go test fast.
const agreeFullEnv = "SLUICE_AGREE_FULL"

// agreeDuration is the length each scenario is scaled to (Options.Duration
// scales the warm-up and every population's window with it, so each
// scenario's attacks start in the same share of the run as in its file).
const agreeDuration = 4 * time.Second

// agreeTransports are the transports the sim and loopback runs are
// compared over; another transport is one more entry. Representative is
// the scenario run without agreeFullEnv: one with hostile traffic, where
// the transport's framing and charging matter.
var agreeTransports = []struct {
	Name           string
	Representative string
}{
	{drive.TransportTCP, "flood-mix"},
	{drive.TransportWS, "flood-mix"},
	{drive.TransportUDP, "flood-mix"},
}

// unasserted lists the scenarios whose comparison is not asserted yet,
// and why: they run, and their differences are logged (docs/transports.md,
// "Sim against loopback").
var unasserted = map[string]string{
	"key-churn": "its churning populations connect again every 10 to 75 ms, and a hello or a refusal still in flight then is Disconnected over sockets (in a valid TCP run: 23 of 2,300 hellos, 18 churn chats against 9, TableFull sessions 173 against 180, 4%); on a shared machine that answers within the validity rule's 20 ms p99 that is inherent, but whether a faster machine brings it within 2% is not measured yet; over UDP, whose hello waits a cookie round trip more, a valid run: churn chats Disconnected 9 against 15 (6 against 12 without the address limit), wide Malformed frames 88 against 84 (4.5%), the rest within 2%",
}

// Every shipped scenario, run in the sim and over loopback sockets with
// the same seed and transport, gives the same outcome counts, variant by
// variant, population by population and kind by kind (sent, accepted and
// each drop reason) within 2% (agree): the sim models the reference
// server's framing, charging, timeouts and disconnects. A loopback run
// marked invalid (the machine could not keep the load generator's
// schedule) is not compared; the test says so.
func TestSimAgreesWithLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("runs over real sockets")
	}
	full := os.Getenv(agreeFullEnv) == "1"
	files := shipped(t)
	for _, tr := range agreeTransports {
		for _, f := range files {
			name := strings.TrimSuffix(f, ".yaml")
			if !full && name != tr.Representative {
				continue
			}
			t.Run(tr.Name+"/"+name, func(t *testing.T) {
				s, err := Load(f)
				require.NoError(t, err)
				if s.Servers > 1 || s.Redis != "" {
					redisproc.Need(t, name+" over loopback")
				}
				opt := Options{Transport: tr.Name, Duration: agreeDuration, Driver: DriverSim}
				units := writeUnits(t, s, opt)
				sim, err := Run(context.Background(), s, opt)
				if err != nil {
					t.Skipf("%s cannot run over %s: %v", name, tr.Name, err)
				}
				opt.Driver = DriverLoopback
				loop, err := Run(context.Background(), s, opt)
				var oe *OptionError
				if errors.As(err, &oe) {
					t.Skipf("%s runs in the sim only over %s: %v", name, tr.Name, err)
				}
				require.NoError(t, err)
				require.Equal(t, sim.Results.Run.Transport, loop.Results.Run.Transport)
				require.Len(t, loop.Results.Variants, len(sim.Results.Variants))
				var skipped []string
				compared := 0
				for i, sv := range sim.Results.Variants {
					lv := loop.Results.Variants[i]
					why := notComparable(lv)
					assert := why == ""
					if reason, ok := unasserted[name]; ok && assert {
						t.Logf("%s/%s %s: compared, not asserted: %s", tr.Name, name, sv.Name, reason)
						assert = false
					}
					worst := compareVariant(t, sv, lv, units, why == "", assert)
					if why == "" && !assert {
						t.Logf("%s/%s %s: worst %s (not asserted)", tr.Name, name, sv.Name, worst)
						continue
					}
					if why != "" {
						skipped = append(skipped, lv.Name+": "+why)
						t.Logf("%s/%s %s: not compared: %s", tr.Name, name, sv.Name, why)
						continue
					}
					compared++
					t.Logf("%s/%s %s: worst %s", tr.Name, name, sv.Name, worst)
				}
				if compared == 0 {
					t.Skipf("no variant could be compared: %v", skipped)
				}
			})
		}
	}
}

// notComparable says why a loopback variant's counts cannot be compared
// with the sim's, or "" if they can. A run marked invalid (the machine
// could not keep the load generator's schedule) is one. So is a run whose
// server answered hellos or pings (which the sim's server answers at once,
// over no network) later than MaxSendLagP99 at the 99th percentile: a
// client that moves on (a new identity, a reconnect) while a reply is in
// flight counts it Disconnected, and what it held behind an unanswered
// hello NotSent, so on a machine too loaded to answer within the shortest
// gaps of the behaviours (key-churn's 25 ms) the counts measure the
// machine's scheduling, not the server's rules.
func notComparable(lv *reports.Variant) string {
	if len(lv.Invalid) > 0 {
		return fmt.Sprintf("invalid: %v", lv.Invalid)
	}
	for _, p := range lv.Populations {
		for _, k := range p.Kinds {
			if k.Kind != "hello" && k.Kind != "ping" || k.ServiceTime == nil {
				continue
			}
			if p99 := time.Duration(k.ServiceTime.P99); p99 > MaxSendLagP99 {
				return fmt.Sprintf("the server's replies came late: %s %s service time p99 = %v > %v", p.Name, k.Kind, p99, MaxSendLagP99)
			}
		}
	}
	return ""
}

// agree reports whether a sim count and a loopback count are within 2% of
// the larger, or within the slack of one client event of each other: 2,
// or unit, the most frames of the kind one write of the population
// carries (64 for a tiny flood). One event: a send or a drop at the
// warm-up's end or the run's end, carried out a scheduling step later
// over sockets, falls on the other side of the edge; and a write made
// after the server cut its client off, before the Disconnect reached it,
// goes out over sockets, where the sim's client, whose network takes no
// time, hears first. 2% of a count under 100 is less than one event.
func agree(a, b, unit int64) bool { return abs(a-b) <= max(2, unit, max(a, b)/50) }

// runSimAndLoopback runs s with opt on the sim driver, then on the
// loopback driver, and returns both outcomes; either run's error fails t.
func runSimAndLoopback(t *testing.T, s *Scenario, opt Options) (sim, loop *Outcome) {
	t.Helper()
	opt.Driver = DriverSim
	sim, err := Run(context.Background(), s, opt)
	require.NoError(t, err)
	opt.Driver = DriverLoopback
	loop, err = Run(context.Background(), s, opt)
	require.NoError(t, err)
	return sim, loop
}

// churnFloor is the shortest gap between a client's connects for which
// its population's counts are compared: a client that moves to a new
// connection sooner than a loopback round trip (through the server's
// reader and writer goroutines and the client's reader, on a shared
// machine: up to a few milliseconds) leaves the reply to its hello, or
// the Disconnect refusing it, in flight. Over sockets that hello is then
// Disconnected and what it held NotSent; in the sim, whose network takes
// no time, the answer always comes first. Such a population's counts
// measure the machine's scheduling, not the server's rules (nat-crowd's
// dialer, which churns every 1 to 3 ms).
const churnFloor = 5 * time.Millisecond

// units describes a population from its plan: the most frames of each
// kind one of its clients packs into a write, and the shortest gap
// between its connects.
type units struct {
	perWrite map[string]int64
	minGap   time.Duration
	// reactive: the stream hears the server's throttles and reconnects on
	// them (behave.ThrottleAware: server-hop). Its schedule then follows
	// when replies arrive: how many requests go on each connection, how
	// many are in flight at each hop (Disconnected). In the sim they
	// arrive with no network time, at the simulated tick; over sockets
	// after a loopback round trip, at the real tick's phase and, with a
	// fleet section, after Redis round trips. Its counts are not compared
	// (the scenario's own thresholds bound what the servers admit); the
	// other populations of its run are.
	reactive bool
	// preAuth: the clients dial and never say Hello (OpDial, no
	// OpConnect: slowloris by default, slot-hold's silent holders). The
	// server counts its decisions on a connection by the label its Hello
	// gave, so over sockets it counts theirs under "(none)", which no
	// population's row reads; the sim knows whose they are. Only the
	// counts the clients see themselves are compared (sent, the session
	// row, the client's own reasons).
	preAuth bool
}

// writeUnits reads the first client's actions of every population (the
// same behaviour and parameters for every client of it) in the plan that
// Run runs for opt.
func writeUnits(t *testing.T, s *Scenario, opt Options) []units {
	t.Helper()
	_, _, plan, err := s.prepare(opt)
	require.NoError(t, err)
	out := make([]units, len(plan.Populations))
	seen := make([]bool, len(plan.Populations))
	for _, c := range plan.Clients() {
		if seen[c.Population] {
			continue
		}
		seen[c.Population] = true
		u := units{perWrite: map[string]int64{}, minGap: -1}
		st := c.Stream()
		_, u.reactive = st.(behave.ThrottleAware)
		last := int64(-1)
		dials, connects := false, false
		for _, a := range behave.Collect(st, 20000) {
			dials = dials || a.Op == behave.OpDial
			connects = connects || a.Op == behave.OpConnect // a retry dials as the client did
			switch a.Op {
			case behave.OpSend:
				u.perWrite[a.Kind.String()] = max(u.perWrite[a.Kind.String()], int64(a.Count))
			case behave.OpConnect, behave.OpDial:
				if last >= 0 && (u.minGap < 0 || time.Duration(a.At-last) < u.minGap) {
					u.minGap = time.Duration(a.At - last)
				}
				last = a.At
			}
		}
		u.preAuth = dials && !connects
		out[c.Population] = u
	}
	return out
}

// difference is one count compared, with its relative difference.
type difference struct {
	What      string
	Sim, Loop int64
}

func (d difference) rel() float64 {
	m := max(d.Sim, d.Loop)
	if m == 0 {
		return 0
	}
	return float64(abs(d.Sim-d.Loop)) / float64(m)
}

func (d difference) String() string {
	return fmt.Sprintf("%.2f%% (%s: %d in the sim, %d over loopback)", 100*d.rel(), d.What, d.Sim, d.Loop)
}

// serverDecided reports whether a compared count is one the server
// decides (accepted, a drop for one of core's reasons) rather than one
// the client sees itself (sent, Disconnected, Timeout, NotSent...).
func serverDecided(what string) bool {
	if what == "accepted" {
		return true
	}
	r, ok := strings.CutPrefix(what, "drop ")
	if !ok {
		return false
	}
	_, err := core.ParseReason(r)
	return err == nil
}

// compareVariant compares every population's kinds of one variant when
// check is set, asserting agreement when assert is too, and returns the
// worst relative difference of the counts compared.
func compareVariant(t *testing.T, sv, lv *reports.Variant, us []units, check, assert bool) difference {
	t.Helper()
	var worst difference
	if !check {
		worst.What = "not compared"
	}
	require.Len(t, lv.Populations, len(sv.Populations), sv.Name)
	for i, sp := range sv.Populations {
		lp := lv.Populations[i]
		require.Equal(t, sp.Name, lp.Name)
		u := us[i]
		popCheck := check
		if u.minGap >= 0 && u.minGap < churnFloor {
			if check {
				t.Logf("%s %s: not compared: its clients connect again %v apart, under churnFloor (%v)", sv.Name, sp.Name, u.minGap, churnFloor)
			}
			popCheck = false
		}
		if u.reactive {
			if check {
				t.Logf("%s %s: not compared: it reconnects on the throttles it hears, so its schedule follows the replies' latency", sv.Name, sp.Name)
			}
			popCheck = false
		}
		kinds := map[string][2]*reports.KindStats{}
		var names []string
		for _, k := range sp.Kinds {
			kinds[k.Kind] = [2]*reports.KindStats{k, nil}
			names = append(names, k.Kind)
		}
		for _, k := range lp.Kinds {
			p, ok := kinds[k.Kind]
			if !ok {
				names = append(names, k.Kind)
			}
			p[1] = k
			kinds[k.Kind] = p
		}
		for _, kind := range names {
			p := kinds[kind]
			s, l := p[0], p[1]
			if s == nil {
				s = &reports.KindStats{}
			}
			if l == nil {
				l = &reports.KindStats{}
			}
			counts := []difference{
				{What: "sent", Sim: s.Sent, Loop: l.Sent},
				{What: "accepted", Sim: s.Accepted, Loop: l.Accepted},
			}
			reasons := map[string]bool{}
			for r := range s.Drops {
				reasons[r] = true
			}
			for r := range l.Drops {
				reasons[r] = true
			}
			var rs []string
			for r := range reasons {
				rs = append(rs, r)
			}
			sort.Strings(rs)
			for _, r := range rs {
				counts = append(counts, difference{What: "drop " + r, Sim: s.Drops[r], Loop: l.Drops[r]})
			}
			for _, c := range counts {
				if u.preAuth && kind != reports.SessionKind && serverDecided(c.What) {
					continue
				}
				c.What = fmt.Sprintf("%s %s %s %s", sv.Name, sp.Name, kind, c.What)
				ok := agree(c.Sim, c.Loop, u.perWrite[kind])
				if !ok {
					t.Logf("differs: %s", c)
				}
				if popCheck {
					if !ok && assert {
						t.Errorf("%s", c)
					}
					if worst.What == "" || c.rel() > worst.rel() {
						worst = c
					}
				}
			}
		}
	}
	return worst
}
