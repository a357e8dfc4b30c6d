package harness

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/behave"
)

// generatorEnv, when set to "I/N@ADDR:PORT:FPS", makes this test binary a
// load generator process instead: segment I of N of the mixed plan
// offering FPS frames per second, driven against the server at ADDR:PORT
// without reading its counters (as sluice run --segment --target does).
const generatorEnv = "SLUICE_HARNESS_GENERATOR"

// generate runs a generator process (see generatorEnv) and returns its
// exit status.
func generate(spec string) int {
	sg, rest, _ := strings.Cut(spec, "@")
	i, n, _ := strings.Cut(sg, "/")
	at := strings.LastIndex(rest, ":")
	addr, fpsText := rest[:at], rest[at+1:]
	idx, err1 := strconv.Atoi(i)
	of, err2 := strconv.Atoi(n)
	fps, err3 := strconv.Atoi(fpsText)
	ap, err4 := netip.ParseAddrPort(addr)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		fmt.Fprintln(os.Stderr, "harness generator: bad", generatorEnv, spec)
		return 2
	}
	plan := mixedPlan(1, segmentRun, fps)
	plan.Segment = behave.Segment{Index: idx, Of: of}
	_, err := loadgen.RunLoopback(context.Background(), loadgen.RunSpec{Plan: plan, Warmup: time.Second, Remote: &loadgen.Remote{Addr: ap}}, policy())
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness generator:", err)
		return 1
	}
	return 0
}

// segmentRun is the length of BenchmarkSegments' runs.
const segmentRun = 4 * time.Second

// BenchmarkSegments offers the mixed plan at 50k frames/s to one server in
// a child process (at equal priority) from one load generator process,
// and from three generator processes each running a third of the
// clients (sluice run --segment I/3): what segmenting costs in itself.
// frames/s is what the server decoded per second of the run; the target is
// generators=3 ≥ generators=1 on this machine.
func BenchmarkSegments(b *testing.B) {
	for _, gens := range []int{1, 3} {
		b.Run(fmt.Sprintf("generators=%d", gens), func(b *testing.B) {
			var fps float64
			for range b.N {
				c := startChild(b, "gate", false)
				before, err := c.stats(context.Background())
				if err != nil {
					c.kill()
					b.Fatal(err)
				}
				start := time.Now()
				procs := make([]*exec.Cmd, gens)
				for i := range procs {
					cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
					cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d/%d@%s:%d", generatorEnv, i, gens, c.addr, 50_000))
					cmd.Stderr = os.Stderr
					if err := cmd.Start(); err != nil {
						c.kill()
						b.Fatal(err)
					}
					procs[i] = cmd
				}
				for _, p := range procs {
					if err := p.Wait(); err != nil {
						c.kill()
						b.Fatal(err)
					}
				}
				wall := time.Since(start)
				after, err := c.stats(context.Background())
				c.stop(b)
				if err != nil {
					b.Fatal(err)
				}
				fps += float64(after.Frames-before.Frames) / wall.Seconds()
			}
			b.ReportMetric(fps/float64(b.N), "frames/s")
		})
	}
}
