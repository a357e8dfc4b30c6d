package core

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"go.uber.org/goleak"
)

const lsec = int64(time.Second)

// fakeClock is a settable clock for limiters under test.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) read() int64 { return c.now.Load() }

func newLimiter(t testing.TB, cfg LimiterConfig) *Limiter {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = func() int64 { return 0 }
	}
	l, err := NewLimiter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLimiterConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg   LimiterConfig
		field string
	}{
		{LimiterConfig{}, "Rate"},
		{LimiterConfig{Rate: -1}, "Rate"},
		{LimiterConfig{Rate: 1, Burst: 0.5}, "Burst"},
		{LimiterConfig{Rate: 1, MaxKeys: -3}, "MaxKeys"},
		{LimiterConfig{Rate: 1, Shards: 3}, "Shards"},
		{LimiterConfig{Rate: 1, MaxSoftViolations: 256}, "MaxSoftViolations"},
		{LimiterConfig{Rate: 1, MaxSoftViolations: -1}, "MaxSoftViolations"},
		{LimiterConfig{Rate: 1, SoftViolationWindow: -time.Second}, "SoftViolationWindow"},
		{LimiterConfig{Rate: 1, LockoutDuration: -1}, "LockoutDuration"},
		{LimiterConfig{Rate: 1, DenyReason: Reason(200)}, "DenyReason"},
	} {
		err := c.cfg.Validate()
		var ce *LimiterConfigError
		if !errors.Is(err, ErrLimiterConfig) || !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.field)
			continue
		}
		if !strings.Contains(err.Error(), c.field) {
			t.Errorf("message %q does not name %s", err, c.field)
		}
		if _, err := NewLimiter(c.cfg); err == nil {
			t.Errorf("NewLimiter accepted %+v", c.cfg)
		}
	}
	if err := (LimiterConfig{Rate: 0}).Validate(); !errors.Is(err, atomicbucket.ErrRate) {
		t.Errorf("rate error does not wrap atomicbucket.ErrRate: %v", err)
	}
	d := LimiterConfig{Rate: 2.5}.WithDefaults()
	if d.Burst != 3 || d.MaxKeys != DefaultMaxKeys || d.SoftViolationWindow != 8*time.Second ||
		d.MaxSoftViolations != 5 || d.LockoutDuration != 30*time.Second || d.DenyReason != AccountLimit ||
		d.Shards == 0 || d.Clock == nil {
		t.Errorf("defaults %+v", d)
	}
}

func TestLimiterTakes(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 10, Burst: 2, DisableEscalation: true})
	want := []Decision{
		{Allowed: true, Remaining: 1},
		{Allowed: true, Remaining: 0},
		{Reason: AccountLimit, RetryAfter: 100 * time.Millisecond},
	}
	for i, w := range want {
		if d := l.TakeAt(1, 0, 1); d != w {
			t.Fatalf("take %d: %+v, want %+v", i, d, w)
		}
	}
	if d := l.TakeAt(1, 50*int64(time.Millisecond), 1); d.Allowed || d.RetryAfter != 50*time.Millisecond {
		t.Fatalf("half refilled: %v", d)
	}
	if d := l.TakeAt(1, 100*int64(time.Millisecond), 1); !d.Allowed {
		t.Fatalf("refilled: %v", d)
	}
	if d := l.TakeAt(2, 0, 3); d.Allowed || d.Reason != Oversize {
		t.Fatalf("n > burst: %v", d)
	}
	if d := l.TakeAt(2, 0, 0); d.Allowed || d.Reason != Oversize {
		t.Fatalf("n = 0: %v", d)
	}
}

// TestLockout walks one key through soft violations to a lockout and out
// of it, at explicit times (defaults: window 8s, 5 violations, 30s).
func TestLockout(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1})
	ms := int64(time.Millisecond)
	if d := l.TakeAt(7, 0, 1); !d.Allowed {
		t.Fatal(d)
	}
	// Four denials inside the window: soft, with the ordinary reason.
	for i := int64(1); i <= 4; i++ {
		d := l.TakeAt(7, i*100*ms, 1)
		if d.Allowed || d.Reason != AccountLimit || d.RetryAfter != time.Duration(lsec-i*100*ms) {
			t.Fatalf("violation %d: %v", i, d)
		}
	}
	if r := l.ReportAt(400 * ms); r.WarnedKeys != 1 || r.SoftWarnings != 4 || r.ActiveLockouts != 0 {
		t.Fatalf("report after 4 violations: %+v", r)
	}
	// The fifth starts the lockout at 0.5s, until 30.5s.
	d := l.TakeAt(7, 500*ms, 1)
	if d.Allowed || d.Reason != Lockout || d.RetryAfter != 30*time.Second {
		t.Fatalf("fifth violation: %v", d)
	}
	// During the lockout every take is refused, even with tokens there,
	// and takes nothing.
	for _, now := range []int64{2 * lsec, 20 * lsec, 30*lsec + 500*ms - 1} {
		d := l.TakeAt(7, now, 1)
		if d.Allowed || d.Reason != Lockout || d.RetryAfter != time.Duration(30*lsec+500*ms-now) {
			t.Fatalf("at %d: %v", now, d)
		}
		if rest, ok := l.LockedOutAt(7, now); !ok || rest != d.RetryAfter {
			t.Fatalf("LockedOutAt %d: %v %v", now, rest, ok)
		}
	}
	if r := l.ReportAt(20 * lsec); r.ActiveLockouts != 1 || r.LockoutsStarted != 1 || r.WarnedKeys != 0 {
		t.Fatalf("report in lockout: %+v", r)
	}
	// Neither a sweep nor churn removes it.
	if n := l.SweepAt(20 * lsec); n != 0 || l.Len() != 1 {
		t.Fatalf("sweep removed a locked-out key")
	}
	// At 30.5s it is over: the bucket is full again.
	if d := l.TakeAt(7, 30*lsec+500*ms, 1); !d.Allowed {
		t.Fatalf("after the lockout: %v", d)
	}
	if _, ok := l.LockedOutAt(7, 30*lsec+500*ms); ok {
		t.Fatal("still locked out")
	}
	// A new window: the violation count starts again from one.
	if d := l.TakeAt(7, 30*lsec+600*ms, 1); d.Reason != AccountLimit {
		t.Fatalf("first violation after lockout: %v", d)
	}
}

func TestSoftWindowExpires(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, SoftViolationWindow: time.Second, MaxSoftViolations: 3})
	ms := int64(time.Millisecond)
	l.TakeAt(1, 0, 1)
	l.TakeAt(1, 100*ms, 1) // violation 1, window until 1.1s
	l.TakeAt(1, 200*ms, 1) // violation 2
	// Refilled at 1s; empty again; the window closes at 1.1s.
	l.TakeAt(1, 1000*ms, 1)
	if d := l.TakeAt(1, 1100*ms, 1); d.Reason != AccountLimit {
		t.Fatalf("violation in a new window: %v", d) // count restarted at 1
	}
	if d := l.TakeAt(1, 1200*ms, 1); d.Reason != AccountLimit {
		t.Fatalf("second violation of the new window: %v", d)
	}
	if d := l.TakeAt(1, 1300*ms, 1); d.Reason != Lockout {
		t.Fatalf("third violation: %v", d)
	}
}

// TestThrottledSurvivesChurn: a throttled key and a locked-out key stay
// so after the table fills with churn keys (which evict each other) and
// after sweeps: eviction can never hand them a fresh bucket.
func TestThrottledSurvivesChurn(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 10, MaxKeys: 64, Shards: 4, EvictBackoff: -1})
	const throttled, locked = 1, 2
	l.TakeAt(throttled, 0, 10) // empty at 0: full only at 10s
	l.TakeAt(locked, 0, 10)
	for i := int64(1); i <= 5; i++ {
		l.TakeAt(locked, i, 1)
	}
	if _, ok := l.LockedOutAt(locked, 5); !ok {
		t.Fatal("not locked out")
	}
	l.Delete(throttled) // start its soft window afresh: no mark, only a low bucket
	l.TakeAt(throttled, 0, 10)
	// Churn: 10,000 new keys between 1s and 9s, each idle by the time the
	// next comes (it takes 1 and the bucket refills in 1s).
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 10000; i++ {
		now := lsec + int64(i)*(8*lsec/10000)
		l.TakeAt(r.Uint64()|1<<63, now, 1)
		if i%1000 == 0 {
			l.SweepAt(now)
		}
	}
	rep := l.ReportAt(9 * lsec)
	if rep.Evicted == 0 || rep.Tracked > rep.Bound {
		t.Fatalf("churn did not fill and evict: %+v", rep)
	}
	if d := l.TakeAt(throttled, 9*lsec, 10); d.Allowed {
		t.Fatalf("throttled key got a fresh bucket: %v", d)
	}
	if lv := l.LevelAt(throttled, 9*lsec); lv != 9 {
		t.Fatalf("throttled key level %v at 9s, want 9", lv)
	}
	if d := l.TakeAt(locked, 9*lsec, 1); d.Reason != Lockout {
		t.Fatalf("locked-out key escaped: %v", d)
	}
	l.SweepAt(9 * lsec)
	if d := l.TakeAt(locked, 9*lsec, 1); d.Reason != Lockout {
		t.Fatalf("locked-out key escaped after a sweep: %v", d)
	}
}

func TestTableFull(t *testing.T) {
	for _, open := range []bool{false, true} {
		l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 16, Shards: 1, FailOpen: open})
		for k := uint64(0); k < 16; k++ {
			if d := l.TakeAt(k, 0, 1); !d.Allowed {
				t.Fatal(d)
			}
		}
		d := l.TakeAt(100, 0, 1)
		want := Decision{Reason: TableFull, RetryAfter: time.Second}
		if open {
			want = Decision{Allowed: true, Reason: TableFull}
		}
		if d != want {
			t.Fatalf("FailOpen=%v: %+v, want %+v", open, d, want)
		}
		r := l.ReportAt(0)
		if open && (r.TableFullPasses != 1 || r.TableFullDenials != 0) || !open && (r.TableFullDenials != 1 || r.TableFullPasses != 0) {
			t.Fatalf("FailOpen=%v: report %+v", open, r)
		}
		if r.Tracked != 16 {
			t.Fatalf("tracked %d", r.Tracked)
		}
		// At 1s every bucket is full again: the new key evicts one.
		if d := l.TakeAt(100, lsec, 1); !d.Allowed || d.Reason != None {
			t.Fatalf("after refill: %v", d)
		}
	}
}

func TestClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	l := newLimiter(t, LimiterConfig{Rate: 100})
	l.StartJanitor(time.Millisecond)
	l.TakeAt(1, 0, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, d := range []Decision{l.TakeAt(1, 0, 1), l.TakeAt(2, 0, 1), l.TakeStringAt("x", 0, 1), l.TakeAddrAt(netip.MustParseAddr("10.0.0.1"), 0, 1), l.Allow(3)} {
		if d != (Decision{Reason: Closed}) {
			t.Fatalf("after Close: %+v", d)
		}
	}
	if !l.ReportAt(0).Closed {
		t.Fatal("report not closed")
	}
	j := l.StartJanitor(time.Millisecond) // on a closed limiter: a no-op
	j.Stop()
}

func TestJanitor(t *testing.T) {
	defer goleak.VerifyNone(t)
	clk := &fakeClock{}
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, Clock: clk.read})
	l.TakeAt(1, 0, 1)
	j := l.StartJanitor(time.Millisecond)
	clk.now.Store(2 * lsec)
	deadline := time.Now().Add(10 * time.Second)
	for l.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("janitor did not sweep")
		}
		time.Sleep(time.Millisecond)
	}
	j.Stop()
	j.Stop()
	l.Close()
}

func TestRefillFactor(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 10, Burst: 10, DisableEscalation: true})
	l.TakeAt(1, 0, 10)
	if err := l.SetRefillFactor(0.5, 0); err != nil {
		t.Fatal(err)
	}
	if lv := l.LevelAt(1, lsec); lv != 5 {
		t.Fatalf("level at half rate after 1s: %v", lv)
	}
	if err := l.SetRefillFactor(1, lsec); err != nil {
		t.Fatal(err)
	}
	if lv := l.LevelAt(1, lsec+lsec/2); lv != 10 {
		t.Fatalf("level back at full rate: %v", lv)
	}
	for _, f := range []float64{0, -1, 1.5} {
		err := l.SetRefillFactor(f, lsec)
		var ce *LimiterConfigError
		if !errors.As(err, &ce) || ce.Field != "RefillFactor" {
			t.Errorf("factor %v: %v", f, err)
		}
	}
	if l.RefillFactor() != 1 || l.ReportAt(lsec).RefillFactor != 1 {
		t.Fatal("factor changed by a refused call")
	}
}

func TestReport(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, MaxKeys: 64, Shards: 2, MaxSoftViolations: 2})
	l.TakeAt(1, 0, 1)
	l.TakeAt(1, 1, 1) // soft warning
	l.TakeAt(2, 0, 1)
	l.TakeAt(2, 1, 1)
	l.TakeAt(2, 2, 1) // lockout
	l.TakeAt(3, 0, 1)
	l.Delete(3)
	l.TakeAt(4, 0, 1)
	l.TakeAt(4, 0, 5) // oversized
	l.SweepAt(int64(time.Second) + 10)
	r := l.ReportAt(lsec + 10)
	want := LimiterReport{
		At: lsec + 10, Capacity: 64, Bound: 64, Rate: 1, RefillFactor: 1, EffectiveRate: r.EffectiveRate, Burst: 1,
		Shards: 2, Tracked: 2, PeakTracked: r.PeakTracked, ActiveLockouts: 1, WarnedKeys: 1, SoftWarnings: 2,
		LockoutsStarted: 1, Swept: 1, Deleted: 1, Oversized: 1,
	}
	if r != want {
		t.Fatalf("report\n%+v\nwant\n%+v", r, want)
	}
	if r.PeakTracked < 3 || r.EffectiveRate < 1 || r.EffectiveRate > 1.000001 {
		t.Fatalf("peak %d, effective rate %v", r.PeakTracked, r.EffectiveRate)
	}
	var back LimiterReport
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Fatalf("JSON round trip: %s → %+v (%v)", b, back, err)
	}
	for _, k := range []string{`"capacity":64`, `"active_lockouts":1`, `"soft_warnings":2`, `"table_full_denials":0`, `"peak_tracked"`, `"swept":1`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
	txt := r.String()
	for _, k := range []string{"capacity:", "active lockouts:", "soft warnings:", "swept:", "table-full denials:", "shards:"} {
		if !strings.Contains(txt, k) {
			t.Errorf("text lacks %q:\n%s", k, txt)
		}
	}
}

func TestKeyKinds(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1, DisableEscalation: true})
	a4 := netip.MustParseAddr("192.0.2.1")
	if l.AddrKey(a4) != l.AddrKey(netip.MustParseAddr("::ffff:192.0.2.1")) {
		t.Error("mapped address is a different key")
	}
	if l.AddrKey(netip.MustParseAddr("fe80::1%eth0")) != l.AddrKey(netip.MustParseAddr("fe80::1")) {
		t.Error("the zone changes the key")
	}
	if l.AddrKey(a4) == l.AddrKey(netip.MustParseAddr("::192.0.2.1")) || l.AddrKey(a4) == l.AddrKey(netip.MustParseAddr("192.0.2.2")) {
		t.Error("distinct addresses share a key")
	}
	if l.StringKey("alice") == l.StringKey("bob") {
		t.Error("string keys collide")
	}
	if !l.TakeStringAt("alice", 0, 1).Allowed || l.TakeStringAt("alice", 0, 1).Allowed || !l.TakeStringAt("bob", 0, 1).Allowed {
		t.Error("string keys")
	}
	if !l.TakeAddrAt(a4, 0, 1).Allowed || l.TakeAddrAt(a4, 0, 1).Allowed {
		t.Error("address keys")
	}
	if !l.DeleteAddr(a4) || !l.DeleteString("alice") || l.Len() != 1 {
		t.Error("delete")
	}
	// Another limiter has another seed.
	l2 := newLimiter(t, LimiterConfig{Rate: 1})
	if l2.StringKey("alice") == l.StringKey("alice") {
		t.Error("two limiters share a seed")
	}
}

func TestLimiterAllocs(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1e6, Burst: 1000})
	addr := netip.MustParseAddr("2001:db8::1")
	l.TakeAt(1, 0, 1)
	l.TakeStringAt("player-1", 0, 1)
	l.TakeAddrAt(addr, 0, 1)
	now := int64(0)
	for name, f := range map[string]func(){
		"uint64": func() { now += 1000; l.TakeAt(1, now, 1) },
		"string": func() { now += 1000; l.TakeStringAt("player-1", now, 1) },
		"addr":   func() { now += 1000; l.TakeAddrAt(addr, now, 1) },
	} {
		if a := testing.AllocsPerRun(1000, f); a != 0 {
			t.Errorf("%s: %v allocations per take", name, a)
		}
	}
	// Denials with escalation, and lockouts, do not allocate either.
	d := newLimiter(t, LimiterConfig{Rate: 1, Burst: 1})
	d.TakeAt(9, 0, 1)
	if a := testing.AllocsPerRun(100, func() { d.TakeAt(9, 0, 1) }); a != 0 {
		t.Errorf("denial: %v allocations", a)
	}
}

// TestLimiterConcurrent runs takes with escalation, sweeps and deletes at
// once (run with -race) and checks the counts add up.
func TestLimiterConcurrent(t *testing.T) {
	l := newLimiter(t, LimiterConfig{Rate: 1000, Burst: 5, MaxKeys: 128, Shards: 4, MaxSoftViolations: 3, LockoutDuration: time.Millisecond})
	var wg sync.WaitGroup
	var allowed, denied atomic.Int64
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			now := int64(0)
			for i := 0; i < 5000; i++ {
				now += r.Int64N(200_000)
				k := r.Uint64N(300)
				switch r.IntN(20) {
				case 0:
					l.Delete(k)
				case 1:
					l.SweepAt(now)
				default:
					if l.TakeAt(k, now, 1).Allowed {
						allowed.Add(1)
					} else {
						denied.Add(1)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	r := l.ReportAt(0)
	if r.Tracked > r.Bound || r.Tracked != l.Len() {
		t.Fatalf("tracked %d of %d", r.Tracked, r.Bound)
	}
	if uint64(denied.Load()) < r.TableFullDenials+r.LockoutsStarted {
		t.Fatalf("counters exceed denials: %+v, %d denied", r, denied.Load())
	}
	t.Logf("allowed %d denied %d: %+v", allowed.Load(), denied.Load(), r)
}
