package benchcheck

import (
	"fmt"
	"testing"
	"time"
)

// recorder is a testing.TB that records what the checks say instead of
// failing the test.
type recorder struct {
	testing.TB
	fatal, logged string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...) }
func (r *recorder) Logf(f string, args ...any)   { r.logged = fmt.Sprintf(f, args...) }
func check(f func(tb testing.TB)) (fatal, logged string) {
	r := &recorder{}
	f(r)
	return r.fatal, r.logged
}

func TestNearlyAllPassedAllowsOnePercentAndTwo(t *testing.T) {
	for _, c := range []struct {
		passed, n   int64
		fails, logs bool
	}{
		{1000, 1000, false, false},
		{988, 1000, false, true}, // 12 failed: 1% and 2
		{987, 1000, true, false}, // 13
		{0, 2, false, true},      // 2 of 2: the slack of 2
		{0, 3, true, false},
	} {
		fatal, logged := check(func(tb testing.TB) { NearlyAllPassed(tb, c.passed, c.n) })
		if (fatal != "") != c.fails || (logged != "") != c.logs {
			t.Errorf("%d of %d passed: fatal %q, logged %q", c.passed, c.n, fatal, logged)
		}
	}
}

func TestAllPassedWantsEvery(t *testing.T) {
	if fatal, _ := check(func(tb testing.TB) { AllPassed(tb, 5, 5) }); fatal != "" {
		t.Errorf("5 of 5: %s", fatal)
	}
	if fatal, _ := check(func(tb testing.TB) { AllPassed(tb, 4, 5) }); fatal != "4 of 5 takes passed, want all" {
		t.Errorf("4 of 5: %q", fatal)
	}
}

func TestClockStartsAtTheFixturesTimeAndAdvances(t *testing.T) {
	c := ClockFrom(42e9)
	first := c.Now()
	if first < 42e9 || first > 42e9+int64(time.Second) {
		t.Fatalf("first reading %d, want 42e9 or a little after", first)
	}
	time.Sleep(time.Millisecond)
	if next := c.Now(); next < first+int64(time.Millisecond) {
		t.Errorf("after 1ms the clock read %d, from %d", next, first)
	}
}
