// Package redisproc starts a redis-server of the caller's own on a free
// loopback port, with no persistence, and stops it: for a harness run of
// several game servers whose fleet needs a Redis (loadgen), and for tests.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrMissing is wrapped by Start's error when redis-server is not
// installed.
var ErrMissing = errors.New("redisproc: redis-server is not installed (Debian: apt-get install redis-server)")

// Path returns the path of redis-server, or an error wrapping ErrMissing.
func Path() (string, error) {
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrMissing, err)
	}
	return p, nil
}

// Proc is a running redis-server: Addr is its 127.0.0.1 address. Stop it
// with Stop. Not safe for concurrent use.
type Proc struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
}

// Start starts redis-server on a free 127.0.0.1 port, with no
// persistence and its working directory in a new temporary directory,
// and waits until it answers a PING (at most 10 s, or until ctx ends).
func Start(ctx context.Context) (*Proc, error) {
	bin, err := Path()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redisproc: a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "sluice-redis-")
	if err != nil {
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	p := &Proc{Addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	p.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := p.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisproc: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c.Ping(ctx).Err() == nil {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop()
			return nil, fmt.Errorf("redisproc: redis-server on %s did not answer", p.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server, reaps it and removes its directory.
func (p *Proc) Stop() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		p.cmd = nil
	}
	os.RemoveAll(p.dir)
}

// TB is the part of testing.TB that Need uses (so that this package, which
// the harness imports, does not import testing).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Need returns the path of redis-server for a test that needs it. Where it
// is not installed the test is skipped, saying what needed it, except in
// CI (CI=true), where tests that need Redis must run: there its absence
// fails the test.
func Need(tb TB, what string) string {
	tb.Helper()
	p, err := Path()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redis-server is required in CI: %v", err)
		}
		tb.Skipf("skipping %s, which needs a real Redis: %v", what, err)
	}
	return p
}
