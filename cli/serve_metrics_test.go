package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// scrape fetches url and parses the text exposition.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err, "%s", body)
	return fams, body
}

// series returns the value of fam's series with the given labels.
func series(t *testing.T, fams map[string]*dto.MetricFamily, fam string, labels map[string]string) float64 {
	t.Helper()
	f := fams[fam]
	require.NotNil(t, f, "no family %s", fam)
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, lp := range m.GetLabel() {
			if labels[lp.GetName()] != lp.GetValue() {
				continue next
			}
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no series %s%v", fam, labels)
	return 0
}

// flood runs n clients that each say Hello and then send tiny inputs as
// fast as the socket takes them, reconnecting when the server cuts them
// off, until the deadline.
func flood(t *testing.T, addr string, n int, until time.Time) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			hello, err := wire.AppendHello(nil, fmt.Appendf(nil, "flooder-%d", i), []byte("flood"))
			if err != nil {
				t.Error(err)
				return
			}
			// Moves (over their channel's rate), inputs on a channel the
			// policy does not have (Malformed) and large ones (over the
			// byte budget).
			var inputs []byte
			big := make([]byte, 2000)
			for j := range 48 {
				ch, payload := uint8(0), []byte{1, 2, 3}
				switch j % 3 {
				case 1:
					ch = 250
				case 2:
					ch, payload = 1, big
				}
				if inputs, err = wire.AppendInput(inputs, ch, payload); err != nil {
					t.Error(err)
					return
				}
			}
			for time.Now().Before(until) { // reconnect when cut off
				floodOnce(addr, hello, inputs, until)
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// floodOnce connects, says Hello and writes inputs until the server cuts
// the connection or until passes.
func floodOnce(addr string, hello, inputs []byte, until time.Time) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetWriteDeadline(until)
	if _, err := c.Write(hello); err != nil {
		return
	}
	for time.Now().Before(until) {
		if _, err := c.Write(inputs); err != nil {
			return
		}
	}
}

// sluice serve --metrics serves the gate's counters over HTTP: scraped
// during a flood the exposition parses; at quiescence every decision
// counter equals the gate's own stats exactly, and the floods by reason
// sum to its totals; promtool finds no problem in it.
func TestServeMetricsDuringAFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server and a flood over loopback sockets")
	}
	started := make(chan *server.Server, 1)
	serveStarted = func(s *server.Server) { started <- s }
	defer func() { serveStarted = nil }()
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetContext(ctx)
	root.SetArgs([]string{"serve", "--policy", scenarioDir + "policies/game.yaml", "--metrics", "127.0.0.1:0", "--log-format", "json"})
	done := make(chan int, 1)
	go func() { done <- execute(root) }()
	var s *server.Server
	select {
	case s = <-started:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, errOut.String())
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not start")
	}
	defer func() {
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, exitOK, code, errOut.String())
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	m := regexp.MustCompile(`metrics on (http://\S+/metrics)`).FindStringSubmatch(out.String())
	require.NotNil(t, m, out.String())
	url := m[1]

	floodDone := make(chan struct{})
	go func() { defer close(floodDone); flood(t, s.Addr().String(), 8, time.Now().Add(1500*time.Millisecond)) }()
	scrapes := 0
	for during := true; during; scrapes++ {
		select {
		case <-floodDone:
			during = false
		case <-time.After(100 * time.Millisecond):
		}
		fams, _ := scrape(t, url) // parses while the counters move
		require.Contains(t, fams, "sluice_gate_messages_total")
	}
	require.Greater(t, scrapes, 3)

	// Quiescence: the clients are gone; wait for the server to close
	// their sessions and for a Step after that.
	deadline := time.Now().Add(20 * time.Second)
	for s.Stats().Conns.Open != 0 {
		require.True(t, time.Now().Before(deadline), "connections still open")
		time.Sleep(10 * time.Millisecond)
	}
	ticks := s.Stats().Ticks
	for s.Stats().Ticks < ticks+2 {
		time.Sleep(10 * time.Millisecond)
	}
	st := s.Gate().Stats()
	fams, body := scrape(t, url)
	require.Positive(t, st.TransportFloods, "the flood was dropped at the transport")
	for _, k := range st.Kinds {
		for _, r := range core.Reasons() {
			assert.Equal(t, float64(k.Counts[r]), series(t, fams, "sluice_gate_messages_total", map[string]string{"kind": k.Name, "reason": r.String()}), "%s %s", k.Name, r)
		}
	}
	for _, a := range []core.Action{core.Accept, core.Drop, core.Reject, core.Disconnect} {
		assert.Equal(t, float64(st.Actions[a]), series(t, fams, "sluice_gate_actions_total", map[string]string{"action": a.String()}))
	}
	for _, sg := range []core.StrikeStage{core.StageWarn, core.StageShed, core.StageDrop, core.StageDisconnect, core.StageLockout} {
		assert.Equal(t, float64(st.StageRises[sg]), series(t, fams, "sluice_gate_strike_stage_entries_total", map[string]string{"stage": sg.String()}))
	}
	assert.Equal(t, float64(st.Lockouts), series(t, fams, "sluice_gate_lockouts_total", nil))
	var floods, floodBytes float64
	for _, r := range []core.Reason{core.ByteLimit, core.FrameLimit, core.Oversize, core.Malformed, core.Duplicate, core.Replay} {
		floods += series(t, fams, "sluice_gate_transport_floods_total", map[string]string{"reason": r.String()})
		floodBytes += series(t, fams, "sluice_gate_transport_flood_bytes_total", map[string]string{"reason": r.String()})
	}
	assert.Equal(t, float64(st.TransportFloods), floods)
	assert.Equal(t, float64(st.TransportFloodBytes), floodBytes)
	assert.Equal(t, 0.0, series(t, fams, "sluice_gate_table_tracked_entries", map[string]string{"table": "sessions"}))
	assert.Positive(t, series(t, fams, "sluice_security_log_reports_total", nil))

	resp, err := http.Get(strings.TrimSuffix(url, "/metrics") + "/debug/pprof/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// The security log, on stderr as JSON, names the flooders' sessions,
	// accounts and source; it is written once the server stops.
	cancel()
	select {
	case code := <-done:
		require.Equal(t, exitOK, code, errOut.String())
		done <- code // for the deferred check
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	events := map[string]int{}
	for _, line := range strings.Split(errOut.String(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		ev, _ := rec["event"].(string)
		events[ev]++
		assert.Equal(t, "sluice security: "+ev, rec["msg"])
		assert.Contains(t, rec, "session")
		assert.Contains(t, rec, "account")
		if src, ok := rec["source"]; ok {
			assert.Equal(t, "127.0.0.1/32", src)
		}
	}
	assert.Positive(t, events["flood"], "stderr: %s", errOut.String())
	assert.Positive(t, events["disconnect"], "stderr: %s", errOut.String())
	promtoolCheck(t, body) // last: it skips where promtool is missing
}

// promtoolCheck runs `promtool check metrics` on an exposition: it must
// report nothing. Without promtool the check fails under CI=true (.ci/run
// installs it) and is skipped elsewhere.
func promtoolCheck(t *testing.T, body []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed (Debian package prometheus; .ci/run installs it)")
		}
		t.Skip("promtool is not installed (Debian package prometheus): the exposition was not linted")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	res, err := cmd.CombinedOutput()
	assert.NoError(t, err, "promtool check metrics:\n%s", res)
	assert.Empty(t, strings.TrimSpace(string(res)), "promtool check metrics")
}

// --metrics refuses an address that is not loopback unless told.
func TestServeMetricsRefusesNonLoopback(t *testing.T) {
	code, _, errOut := runCLI(t, "serve", "--policy", scenarioDir+"policies/game.yaml", "--metrics", "0.0.0.0:0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--metrics 0.0.0.0:0: not a loopback address")
	assert.Contains(t, errOut, "--metrics-allow-non-loopback")
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--log-level", "loud"}, {"--log-sample", "0"}, {"--metrics", "nonsense"}} {
		code, _, errOut := runCLI(t, append([]string{"serve", "--policy", scenarioDir + "policies/game.yaml"}, bad...)...)
		assert.Equal(t, exitUsage, code, "%v: %s", bad, errOut)
		assert.Contains(t, errOut, bad[0]+" "+bad[1])
	}
}
