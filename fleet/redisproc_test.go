package fleet

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedev/sluice/internal/redisproc"
)

// redisProc is a redis-server of a test's own on a free loopback port,
// with no persistence: stopped (and its process reaped) by the test's
// cleanup.
type redisProc struct {
	t    testing.TB
	addr string
	port int
	cmd  *exec.Cmd
	args []string
}

// needRedis returns the path of redis-server, skipping the test when it is
// absent, except in CI (CI=true), where its absence fails the test.
func needRedis(t testing.TB) string {
	return redisproc.Need(t, "a test of the fleet")
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startRedis(t testing.TB, extra ...string) *redisProc {
	bin := needRedis(t)
	port := freePort(t)
	r := &redisProc{t: t, port: port, addr: "127.0.0.1:" + strconv.Itoa(port)}
	r.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, extra...)
	r.start(bin)
	t.Cleanup(r.kill)
	return r
}

func (r *redisProc) start(bin string) {
	r.cmd = exec.Command(bin, r.args...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: r.addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server on %s did not answer", r.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *redisProc) signal(s syscall.Signal) {
	if err := r.cmd.Process.Signal(s); err != nil {
		r.t.Fatal(err)
	}
}

// kill ends the server with SIGKILL (after SIGCONT, were it stopped) and
// reaps it.
func (r *redisProc) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT)
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// restart starts a fresh server (no keys, no scripts) on the same port.
func (r *redisProc) restart() {
	bin := needRedis(r.t)
	r.start(bin)
}

func (r *redisProc) client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.addr, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// quietLogger drops go-redis's own log lines (dial failures while a test
// has Redis stopped on purpose); the tests count the errors instead.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietLogger{}) }
