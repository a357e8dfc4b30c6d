package atomicbucket

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// maxFillSec is MaxFillTime in seconds.
var maxFillSec = MaxFillTime.Seconds()

// fuzzRates are the rates a rate selector with low bits 00 picks from: the
// seed example's first, then the boundaries of the encoding (the ends of the
// range, the rates where F changes, the slowest rate a burst of 1e9 allows).
var fuzzRates = []float64{
	10, 0.001, 1e9, 5e8, 5e8 + 1, 1e9 - 1, math.Nextafter(5e8, 0),
	1e9 / maxFillSec, 1.0 / 3, 30, 480_000, 2.5, 1, 0.5, 7e8,
	123_456.789, 1 << 20, 0.75, 1e6 / 7, 0.001 * (1 + 1e-12),
}

// fuzzRate maps a selector onto a valid rate in [0.001, 1e9].
func fuzzRate(sel uint64) float64 {
	var r float64
	switch sel & 3 {
	case 0:
		return fuzzRates[(sel>>2)%uint64(len(fuzzRates))]
	case 1: // an integer rate, log-uniform
		u := float64(sel>>11) / (1 << 53)
		r = math.Round(math.Pow(10, 9*u))
	default: // log-uniform over the whole range
		u := float64(sel>>11) / (1 << 53)
		r = 0.001 * math.Pow(10, 12*u)
	}
	return math.Min(MaxRate, math.Max(0.001, r))
}

// fuzzBurst maps a selector onto a valid burst for rate: in [1, 1e9] with a
// fill time of at most MaxFillTime.
func fuzzBurst(rate float64, sel uint64) float64 {
	hi := math.Min(MaxBurst, rate*maxFillSec)
	for hi/rate > maxFillSec {
		hi = math.Nextafter(hi, 0)
	}
	u := float64(sel>>11) / (1 << 53)
	var b float64
	switch sel & 7 {
	case 0:
		b = 1
	case 1:
		b = DefaultBurst(rate)
	case 2:
		b = math.Floor(hi)
	case 3:
		b = float64(1 + (sel>>3)%64)
	case 4, 5: // integer, log-uniform
		b = math.Floor(math.Pow(math.Floor(hi), u))
	case 6: // not an integer, log-uniform
		b = math.Pow(hi, u)
	default:
		b = hi
	}
	return math.Min(hi, math.Max(1, b))
}

// Seed-corpus selector encodings.
func rateTableSel(i int) uint64  { return uint64(i) << 2 }
func burstSmallSel(b int) uint64 { return uint64(b-1)<<3 | 3 }

const (
	burstOne     = 0 // selector for burst 1
	burstDefault = 1 // DefaultBurst(rate)
	burstMax     = 7 // the largest burst the rate allows
)

// An op is 4 bytes: a time step kind, two bytes of magnitude, and the
// n kind. Steps are mostly forward, sometimes exactly the last RetryAfter (or
// a nanosecond either side), sometimes a little backwards, rarely a jump
// back past a fill time and StepBack.
func op(kind byte, mag uint16, nk byte) []byte { return []byte{kind, byte(mag >> 8), byte(mag), nk} }

const (
	dtZero     = 0
	dtTiny     = 2
	dtNs       = 3
	dtTokenFr  = 4
	dtTokens   = 6
	dtFill     = 7
	dtRetry    = 8
	dtRetryM1  = 9
	dtRetryP1  = 10
	dtBackNs   = 11
	dtBack     = 12
	dtJumpBack = 13
	dtOne      = 14
	dtMillis   = 15

	nOne     = 0
	nSmall   = 150
	nMax     = 210
	nAny     = 225
	nMaxM1   = 240
	nZero    = 245
	nOver    = 250
	nHuge    = 255
	maxSteps = 512
)

func FuzzAgainstModel(f *testing.F) {
	cat := func(ops ...[]byte) []byte {
		var b []byte
		for _, o := range ops {
			b = append(b, o...)
		}
		return b
	}
	// The seed example: rate 10, burst 3.
	seed := cat(
		op(dtZero, 0, nOne), op(dtZero, 0, nOne), op(dtZero, 0, nOne),
		op(dtZero, 0, nOne),     // denied, 100ms
		op(dtMillis, 50, nOne),  // 0.5 tokens: denied, 50ms
		op(dtRetryM1, 0, nOne),  // a nanosecond early
		op(dtRetry, 0, nOne),    // 1 ns later: the token is there
		op(dtMillis, 250, nMax), // 2.5 tokens: 3 denied
		op(dtRetry, 0, nMax),
		op(dtMillis, 60000, nOne), // idle: capped at burst
		op(dtZero, 0, nMax), op(dtZero, 0, nZero), op(dtZero, 0, nOver),
		op(dtBackNs, 5, nOne), op(dtBack, 30000, nOne),
	)
	f.Add(rateTableSel(0), burstSmallSel(3), int64(0), seed)
	generic := cat(
		op(dtZero, 0, nMax), op(dtZero, 0, nOne), op(dtTokenFr, 40000, nOne),
		op(dtRetry, 0, nOne), op(dtRetry, 0, nSmall+3), op(dtRetryM1, 0, nSmall+3),
		op(dtRetryP1, 0, nOne), op(dtTiny, 7, nOne), op(dtNs, 900, nAny),
		op(dtTokens, 5000, nAny), op(dtBackNs, 100, nOne), op(dtRetry, 0, nOne),
		op(dtFill, 20000, nMax), op(dtFill, 65535, nMaxM1), op(dtOne, 0, nOne),
		op(dtJumpBack, 0xF000, nOne), op(dtRetry, 0, nOne), op(dtZero, 0, nHuge),
		op(dtFill, 1000, nAny), op(dtBack, 65535, nAny), op(dtRetry, 0, nAny),
	)
	for i := range fuzzRates {
		for _, bs := range []uint64{burstOne, burstDefault, burstMax, burstSmallSel(3)} {
			f.Add(rateTableSel(i), bs, int64(i)<<40-1<<43, generic)
		}
	}
	f.Add(uint64(2), uint64(6)|1<<62, int64(-1), generic) // slowest rate, fractional burst
	f.Add(^uint64(0), uint64(4), int64(1<<62), generic)   // fastest rate
	f.Fuzz(func(t *testing.T, rateSel, burstSel uint64, start int64, ops []byte) {
		checkAgainstModel(t, rateSel, burstSel, start, ops)
	})
}

// TestAgainstModelRandom runs the fuzz body on pseudo-random inputs, so that
// a plain go test covers more than the seed corpus.
func TestAgainstModelRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	iters := 300
	if testing.Short() || raceEnabled {
		iters = 50
	}
	var full fullTakes
	for i := 0; i < iters; i++ {
		ops := make([]byte, 4*(1+rng.IntN(200)))
		for j := range ops {
			ops[j] = byte(rng.Uint32())
		}
		f := checkAgainstModel(t, rng.Uint64(), rng.Uint64(), int64(rng.Uint64()), ops)
		if t.Failed() {
			return
		}
		full.one, full.more, full.invalid = full.one+f.one, full.more+f.more, full.invalid+f.invalid
	}
	// Every branch of Pass.NextFull was held to Decide.
	if full.one == 0 || full.more == 0 || full.invalid == 0 {
		t.Fatalf("takes on a full bucket: %+v; every kind must be checked", full)
	}
	t.Logf("takes on a full bucket: %+v", full)
}

// checkAgainstModel drives one configuration and one sequence of takes
// through the bucket, the mutex reference and the exact model, and requires
// identical decisions, words and levels at every step, plus the exact
// boundary of every RetryAfter. It returns how many takes found the bucket
// full (where the inline pass path decides with Pass.NextFull), by kind.
func checkAgainstModel(t *testing.T, rateSel, burstSel uint64, start int64, ops []byte) (full fullTakes) {
	t.Helper()
	rate := fuzzRate(rateSel)
	burst := fuzzBurst(rate, burstSel)
	start >>= 4 // |start| ≤ 2^59: no int64 overflow over maxSteps steps
	b, err := NewAt(rate, burst, start)
	if err != nil {
		t.Fatalf("valid config rate %v burst %v refused: %v", rate, burst, err)
	}
	ref := newRefBucket(&b.Limit, start)
	m := newRatModel(t, &b.Limit, rate, burst, start)
	maxN := m.maxN
	tok := 1e9 / rate
	fill := burst * tok
	now := start
	decided := b.Word()
	var liveWord atomic.Uint64
	liveWord.Store(b.Word())
	var lastRetry time.Duration
	if len(ops) > 4*maxSteps {
		ops = ops[:4*maxSteps]
	}
	for i := 0; i+4 <= len(ops); i += 4 {
		mag := uint64(ops[i+1])<<8 | uint64(ops[i+2])
		var dt int64
		switch ops[i] % 16 {
		case dtZero, dtZero + 1:
			dt = 0
		case dtTiny:
			dt = int64(mag % 256)
		case dtNs:
			dt = int64(mag)
		case dtTokenFr, dtTokenFr + 1:
			dt = int64(math.Round(float64(mag) / 65536 * tok))
		case dtTokens:
			dt = int64(math.Round(float64(mag) / 4096 * tok))
		case dtFill:
			dt = int64(math.Round(float64(mag) / 32768 * fill))
		case dtRetry:
			dt = int64(lastRetry)
		case dtRetryM1:
			dt = max(int64(lastRetry)-1, 0)
		case dtRetryP1:
			dt = int64(lastRetry) + 1
		case dtBackNs:
			dt = -int64(mag % 4096)
		case dtBack:
			dt = -int64(math.Round(float64(mag) / 65536 * math.Min(tok, 1e9)))
		case dtJumpBack:
			if mag >= 0xF000 {
				dt = -(int64(2*fill) + 2*int64(StepBack) + int64(mag))
			} else {
				dt = -int64(mag)
			}
		case dtOne:
			dt = 1
		case dtMillis:
			dt = int64(mag) * 1e6
		}
		now += dt
		var n uint64
		switch nk := ops[i+3]; {
		case nk < nSmall:
			n = 1
		case nk < nMax:
			n = 1 + uint64(nk)%min(maxN, 16)
		case nk < nAny:
			n = maxN
		case nk < nMaxM1:
			n = 1 + (mag*maxN)>>16
		case nk < nZero:
			n = max(maxN-1, 1)
		case nk < nOver:
			n = 0
		case nk < nHuge:
			n = maxN + 1
		default:
			n = math.MaxUint64
		}

		// The three hand-written loops side by side: TakeAt on the
		// bucket, Decide plus a store on one copy of the word, TakeLiveAt
		// on another (with a dead value no word takes here). And the
		// inline pass path, which must pass exactly where Decide does,
		// with the same word and Result.
		pass := b.Snapshot().PassAt(now, n)
		passNext, passRes, passOK := pass.Next(decided)
		next, dec := b.Decide(decided, now, n)
		if passOK != (dec.Status() == Allowed) || passOK && (passNext != next || passRes != dec) {
			t.Fatalf("rate %v burst %v start %d step %d: Pass.Next(%#x) at %d, n=%d = %#x, %+v, %v; Decide %#x, %+v",
				rate, burst, start, i/4, decided, now, n, passNext, passRes, passOK, next, dec)
		}
		// Next is NextFull on a full word (held to Decide just above) and
		// NextPartial otherwise: IsFull must pick as Limit.IsFull does.
		// The full takes are counted by kind, so that the caller can
		// require that each branch of NextFull was held to Decide.
		if isFull := pass.IsFull(decided); isFull != b.IsFull(decided, now) {
			t.Fatalf("rate %v burst %v step %d: Pass.IsFull(%#x) at %d = %v, Limit.IsFull %v",
				rate, burst, i/4, decided, now, isFull, !isFull)
		} else if isFull {
			switch {
			case !passOK:
				full.invalid++
			case n == 1:
				full.one++ // the precomputed take of one token
			default:
				full.more++
			}
		}
		decided = next
		live, liveOK := b.TakeLiveAt(&liveWord, now, n, b.Word()^1<<63)
		got := b.TakeAt(now, n)
		gotRef := ref.takeAt(now, n)
		want := m.take(now, n)
		step := i / 4
		if decisionOf(got) != want || gotRef != want || decisionOf(dec) != want || decisionOf(live) != want || !liveOK {
			t.Fatalf("rate %v burst %v start %d step %d: take(%d, n=%d) = %+v, reference %+v, Decide %+v, TakeLiveAt %+v (%v), model %+v",
				rate, burst, start, step, now, n, decisionOf(got), gotRef, decisionOf(dec), decisionOf(live), liveOK, want)
		}
		if w := m.word(); b.Word() != w || ref.word() != w || decided != w || liveWord.Load() != w {
			t.Fatalf("rate %v burst %v step %d: word %#x, reference %#x, Decide %#x, TakeLiveAt %#x, model %#x",
				rate, burst, step, b.Word(), ref.word(), decided, liveWord.Load(), w)
		}
		if got, want := b.TokensAt(now), m.tokens(now); got != want {
			t.Fatalf("rate %v burst %v step %d: TokensAt(%d) = %v, model %v", rate, burst, step, now, got, want)
		}
		if got, want := b.IsFull(b.Word(), now), m.full(now); got != want {
			t.Fatalf("rate %v burst %v step %d: IsFull = %v, model %v", rate, burst, step, got, want)
		}
		lastRetry = 0
		if got.Status() != Denied {
			continue
		}
		lastRetry = got.RetryAfter()
		// Exact boundary, probed on a copy of the word so the sequence is
		// undisturbed: with no change in between, the same take passes at
		// exactly now+RetryAfter, and a nanosecond earlier it fails with
		// one nanosecond to go.
		r := int64(got.RetryAfter())
		if r <= 0 || got.RetryAfter() == math.MaxInt64 || now > math.MaxInt64-r {
			t.Fatalf("step %d: denial with RetryAfter %v", step, got.RetryAfter())
		}
		var probe atomic.Uint64
		probe.Store(b.Word())
		if early := b.Limit.TakeAt(&probe, now+r-1, n); early.Status() != Denied || early.RetryAfter() != 1 {
			t.Fatalf("rate %v burst %v step %d: take(n=%d) at now+RetryAfter-1 = %+v, want denied with 1ns to go",
				rate, burst, step, n, early)
		}
		if probe.Load() != b.Word() {
			t.Fatalf("step %d: the early probe wrote", step)
		}
		if onTime := b.Limit.TakeAt(&probe, now+r, n); onTime.Status() != Allowed {
			t.Fatalf("rate %v burst %v step %d: take(n=%d) at now+RetryAfter (%v) = %+v, want allowed",
				rate, burst, step, n, got.RetryAfter(), onTime)
		}
	}
	return full
}

// fullTakes counts the takes that found the bucket full: of one token (the
// precomputed case of Pass.NextFull), of more, and of an invalid n.
type fullTakes struct{ one, more, invalid int }
