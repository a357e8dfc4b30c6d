package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/loadgen/server"
)

// serverEnv, when set in the environment ("gate" or "nolimits", with
// "-ws" or "-udp" after either for a server that listens for WebSocket or
// UDP), makes
// this test binary a standalone server instead (see serveChild).
const serverEnv = "SLUICE_HARNESS_SERVER"

// childLimit bounds a child server's life even if its parent never closes
// its stdin.
const childLimit = 2 * time.Minute

// childStats is what a child server reports when it stops.
type childStats struct {
	Frames     uint64
	Refused    uint64        // frames dropped or rejected, every population
	ProcessCPU time.Duration // user + system CPU time since Start
	Service    time.Duration // ReadService + TickService
}

// childMode is the serverEnv mode of a child server that listens for
// transport ("" or "tcp", "ws", "udp"), with the gate on or, if noLimits,
// off (see serveChild).
func childMode(transport string, noLimits bool) string {
	mode := "gate"
	if noLimits {
		mode = "nolimits"
	}
	switch transport {
	case drive.TransportWS:
		mode += "-ws"
	case drive.TransportUDP:
		mode += "-udp"
	}
	return mode
}

// serveChild runs a server on 127.0.0.1 (a free port) with policy(), the
// gate on or (mode "nolimits") off, prints its address on a line of
// stdout, and serves until stdin ends (or childLimit passes). Each line
// "stats" on stdin is answered with the server's server.Stats as one line
// of JSON. At the end it waits up to 5s for its connections to close,
// prints its childStats as JSON and returns the exit status.
func serveChild(mode string) int {
	mode, udp := strings.CutSuffix(mode, "-udp")
	mode, ws := strings.CutSuffix(mode, "-ws")
	cfg := server.Config{Policy: policy(), MaxConns: 20000, NoLimits: mode == "nolimits"}
	if ws {
		cfg.WebSocket.Addr = "127.0.0.1:0"
	}
	if udp {
		cfg.UDP.Addr = "127.0.0.1:0"
	}
	srv, err := server.New(cfg)
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness child:", err)
		return 2
	}
	defer srv.Close()
	if ws {
		fmt.Println(srv.WSAddr())
	} else if udp {
		fmt.Println(srv.UDPAddr())
	} else {
		fmt.Println(srv.Addr())
	}
	// stdout carries the answers to "stats" until serving ends, then the
	// final childStats line: once ended, no answer may follow it.
	var (
		outMu sync.Mutex
		ended bool
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		in := bufio.NewScanner(os.Stdin)
		enc := json.NewEncoder(os.Stdout)
		for in.Scan() {
			if in.Text() != "stats" {
				continue
			}
			outMu.Lock()
			var err error
			if !ended {
				err = enc.Encode(srv.Stats())
			}
			outMu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(childLimit):
	}
	outMu.Lock()
	ended = true
	outMu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); srv.Stats().Conns.Open != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	st := srv.Stats()
	cs := childStats{Frames: st.Frames, ProcessCPU: st.ProcessCPU, Service: st.ReadService + st.TickService}
	for _, p := range st.Populations {
		for _, n := range p.Dropped {
			cs.Refused += n
		}
		for _, n := range p.Rejected {
			cs.Refused += n
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(cs); err != nil {
		return 2
	}
	return 0
}

// child is a server running in a child process (this test binary, see
// serveChild).
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	addr   netip.AddrPort
	waited bool
}

// startChild starts a child server (mode "gate" or "nolimits"), at the
// lowest CPU priority (nice 19) if low, and reads its address. The caller
// must call stop, or kill on a failure path.
func startChild(b *testing.B, mode string, low bool) *child {
	b.Helper()
	args := []string{os.Args[0], "-test.run=^$", "-test.bench=^$"}
	if low {
		// nice(1) sets the priority before the binary starts, so every
		// thread of the child inherits it (on Linux a setpriority call
		// applies to one thread).
		nice, err := exec.LookPath("nice")
		if err != nil {
			b.Fatalf("a low-priority child server needs nice(1): %v", err)
		}
		args = append([]string{nice, "-n", "19"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), serverEnv+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := c.out.ReadString('\n')
	if err != nil {
		c.kill()
		b.Fatalf("child server: %v", err)
	}
	c.addr, err = netip.ParseAddrPort(strings.TrimSpace(line))
	if err != nil || !c.addr.Addr().IsLoopback() {
		c.kill()
		b.Fatalf("child server address %q: %v", line, err)
	}
	return c
}

// stats asks the child for its server's counters (loadgen.Remote.Stats).
// If ctx ends first, it kills the child, which ends the pending read.
func (c *child) stats(ctx context.Context) (server.Stats, error) {
	type reply struct {
		st  server.Stats
		err error
	}
	got := make(chan reply, 1)
	go func() {
		var r reply
		if _, r.err = io.WriteString(c.stdin, "stats\n"); r.err == nil {
			var line []byte
			if line, r.err = c.out.ReadBytes('\n'); r.err == nil {
				r.err = json.Unmarshal(line, &r.st)
			}
		}
		got <- r
	}()
	select {
	case r := <-got:
		return r.st, r.err
	case <-ctx.Done():
		c.kill()
		<-got
		return server.Stats{}, ctx.Err()
	}
}

// stop ends the child and returns what it counted.
func (c *child) stop(b *testing.B) childStats {
	b.Helper()
	c.stdin.Close()
	var st childStats
	if err := json.NewDecoder(c.out).Decode(&st); err != nil {
		c.kill()
		b.Fatalf("child server stats: %v", err)
	}
	c.waited = true
	if err := c.cmd.Wait(); err != nil {
		b.Fatalf("child server: %v", err)
	}
	return st
}

// kill stops the child at once, if stop has not waited for it.
func (c *child) kill() {
	if !c.waited {
		c.waited = true
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
}

// runChild starts a child server (mode and priority as startChild's), runs
// spec's clients against it through loadgen.RunLoopback with spec.Remote,
// stops the child and returns both sides' figures.
func runChild(b *testing.B, spec loadgen.RunSpec, mode string, low bool) (*loadgen.Result, childStats) {
	b.Helper()
	c := startChild(b, mode, low)
	defer c.kill()
	spec.Remote = &loadgen.Remote{Addr: c.addr, Stats: c.stats}
	res := runLoopback(b, spec, policy())
	return res, c.stop(b)
}
