package fleet

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedev/sluice/core"
)

// Strict is strict mode: every take is decided by an atomic GCRA script
// on Redis (strictScript, by EVALSHA), so the fleet never admits more than the
// bucket allows, at the price of a round trip per take. It blocks its
// caller for that round trip: use it where the client waits for an answer
// anyway (a purchase, a trade), never on the gate's input path.
//
// Takes of concurrent callers are batched: a few sender goroutines each
// gather the takes waiting (up to MaxBatch) and send them in one round
// trip (on a single Redis one script call deciding each take in turn, on
// a Cluster a pipeline of one script call per key, since the keys of one
// call must share a slot), so throughput grows with the callers instead
// of one round trip per take. Start them with NewStrict; Close stops
// them. Safe for concurrent use.
type Strict struct {
	c      redis.UniversalClient
	prefix string
	in     chan *strictReq
	wg     sync.WaitGroup
	once   sync.Once
	pool   sync.Pool
	closed chan struct{}
	// cluster: keys may be on different nodes, so a batch is a pipeline of
	// one strictScript call per key; on a single Redis it is one call.
	cluster bool
}

// StrictConfig configures a Strict.
type StrictConfig struct {
	// Prefix starts every bucket's Redis key. Default "sluice".
	Prefix string
	// Senders is the number of pipelines in flight at once. Default 4.
	Senders int
	// MaxBatch bounds the takes of one pipeline. Default 128.
	MaxBatch int
}

type strictReq struct {
	ctx  context.Context
	key  string
	lim  Limit
	n    int64
	res  [3]int64 // allowed, remaining, retry in µs
	err  error
	done chan struct{}
}

// ErrClosed is returned by a take on a closed Strict.
var ErrClosed = errors.New("fleet: closed")

// NewStrict starts a Strict on c; the caller owns c.
func NewStrict(ctx context.Context, c redis.UniversalClient, cfg StrictConfig) (*Strict, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = "sluice"
	}
	if cfg.Senders <= 0 {
		cfg.Senders = 4
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 128
	}
	if err := strictScript.Load(ctx, c).Err(); err != nil {
		return nil, err
	}
	_, cluster := c.(*redis.ClusterClient)
	s := &Strict{c: c, prefix: cfg.Prefix, cluster: cluster, in: make(chan *strictReq, cfg.Senders*cfg.MaxBatch), closed: make(chan struct{})}
	s.pool.New = func() any { return &strictReq{done: make(chan struct{}, 1)} }
	for range cfg.Senders {
		s.wg.Add(1)
		go s.send(cfg.MaxBatch)
	}
	return s, nil
}

// Key is the Redis key of a strict bucket named name: hash-tagged, one
// Cluster slot.
func (s *Strict) Key(name string) string { return s.prefix + ":{" + name + "}" }

// TakeAt takes n tokens from the fleet bucket key (a Redis key, see Key)
// with the limit lim, waiting for Redis. A denial has reason and the time
// until n tokens will be there. An error (Redis unavailable, ctx done)
// decides nothing: the caller chooses what to do.
func (s *Strict) Take(ctx context.Context, key string, lim Limit, n int64, reason core.Reason) (core.Decision, error) {
	if err := lim.valid(); err != nil {
		return core.Decision{}, err
	}
	if n < 1 || float64(n) > lim.Burst {
		return core.Decision{Reason: core.Oversize}, nil
	}
	r := s.pool.Get().(*strictReq)
	r.ctx, r.key, r.lim, r.n, r.err = ctx, key, lim, n, nil
	select {
	case s.in <- r:
	case <-s.closed:
		s.pool.Put(r)
		return core.Decision{}, ErrClosed
	case <-ctx.Done():
		s.pool.Put(r)
		return core.Decision{}, ctx.Err()
	}
	<-r.done // the sender always answers
	// Decide before r goes back to the pool: the next take to get it has
	// its answer written into r.res.
	var d core.Decision
	err := r.err
	if err == nil {
		res := r.res
		d.Remaining = uint32(max(0, res[1]))
		if res[0] == 1 {
			d.Allowed = true
		} else {
			d.Reason, d.RetryAfter = reason, time.Duration(res[2])*time.Microsecond
		}
	}
	r.ctx = nil
	s.pool.Put(r)
	return d, err
}

// Close stops the senders once the takes already queued are answered.
func (s *Strict) Close() {
	s.once.Do(func() { close(s.closed) })
	s.wg.Wait()
}

func (s *Strict) send(maxBatch int) {
	defer s.wg.Done()
	b := &strictBatch{reqs: make([]*strictReq, 0, maxBatch), index: make(map[string]int, maxBatch)}
	for {
		batch := b.reqs[:0]
		select {
		case r := <-s.in:
			batch = append(batch, r)
		case <-s.closed:
			for {
				select {
				case r := <-s.in:
					r.err = ErrClosed
					r.done <- struct{}{}
				default:
					return
				}
			}
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-s.in:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		b.reqs = batch
		s.exec(b)
	}
}

// exec sends one batch of takes and answers each; on NOSCRIPT (a
// restarted Redis) it loads the script and sends the batch again once.
func (s *Strict) exec(b *strictBatch) {
	ctx := context.Background() // one caller's deadline must not fail the others' takes
	for try := 0; ; try++ {
		var err error
		if s.cluster {
			err = s.execPerKey(ctx, b)
		} else {
			err = s.execOne(ctx, b)
		}
		if isNoScript(err) && try == 0 {
			if strictScript.Load(ctx, s.c).Err() == nil {
				continue
			}
		}
		for _, r := range b.reqs {
			if r.err == nil && err != nil {
				r.err = err
			}
			r.done <- struct{}{}
		}
		return
	}
}

// execOne decides the whole batch in one strictScript call (a single
// Redis: every key is on the one node).
func (s *Strict) execOne(ctx context.Context, b *strictBatch) error {
	b.group(b.reqs)
	return b.run(ctx, s.c, b.reqs)
}

// execPerKey decides the batch in one pipeline of strictScript calls,
// one per key (a Cluster: the keys of one call must share a slot, and
// each bucket's key is its own hash tag).
func (s *Strict) execPerKey(ctx context.Context, b *strictBatch) error {
	// Order the takes by key, keeping each key's takes in arrival order,
	// so that each key's takes are one run of b.reqs.
	slices.SortStableFunc(b.reqs, func(x, y *strictReq) int { return strings.Compare(x.key, y.key) })
	p := s.c.Pipeline()
	b.cmds = b.cmds[:0]
	b.args = b.args[:0]
	type span struct{ from, to, arg int }
	spans := make([]span, 0, len(b.reqs))
	for i := 0; i < len(b.reqs); {
		j := i + 1
		for j < len(b.reqs) && b.reqs[j].key == b.reqs[i].key {
			j++
		}
		from := len(b.args)
		for _, r := range b.reqs[i:j] {
			b.args = appendTake(b.args, 1, r)
		}
		spans = append(spans, span{i, j, from})
		i = j
	}
	for _, sp := range spans {
		// The packed takes live in b.args until Exec has written them.
		b.cmds = append(b.cmds, strictScript.EvalSha(ctx, p, []string{b.reqs[sp.from].key}, b.args[sp.arg:sp.arg+takeSize*(sp.to-sp.from)]))
	}
	_, err := p.Exec(ctx)
	if isNoScript(err) {
		return err
	}
	for i, sp := range spans {
		reqs := b.reqs[sp.from:sp.to]
		v, err := b.cmds[i].Text()
		if err == nil {
			err = decodeTakes(v, reqs)
		}
		if err != nil {
			for _, r := range reqs {
				r.err = err
			}
		}
	}
	return nil
}

// takeSize is the bytes of one packed take in strictScript's ARGV[1]:
// four little-endian float64, the key's index in KEYS (from 1), the time
// per token in µs, the burst and n.
const takeSize = 32

func appendTake(b []byte, key int, r *strictReq) []byte {
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(key)))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(1e6/r.lim.Rate))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.lim.Burst))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(r.n)))
}

// strictBatch is one sender's reusable state for a batch: the takes, the
// distinct keys and the packed takes of one strictScript call.
type strictBatch struct {
	reqs  []*strictReq
	keys  []string
	index map[string]int
	args  []byte
	cmds  []*redis.Cmd
}

// group fills keys (each distinct key of reqs once, in first-arrival
// order) and args (reqs packed, each naming its key's index).
func (b *strictBatch) group(reqs []*strictReq) {
	b.keys, b.args = b.keys[:0], b.args[:0]
	clear(b.index)
	for _, r := range reqs {
		k, ok := b.index[r.key]
		if !ok {
			b.keys = append(b.keys, r.key)
			k = len(b.keys)
			b.index[r.key] = k
		}
		b.args = appendTake(b.args, k, r)
	}
}

// run sends the grouped batch in one strictScript call and answers reqs.
func (b *strictBatch) run(ctx context.Context, c redis.Scripter, reqs []*strictReq) error {
	v, err := strictScript.EvalSha(ctx, c, b.keys, b.args).Text()
	if err != nil {
		return err
	}
	return decodeTakes(v, reqs)
}

// le64 is the little-endian uint64 at the start of v.
func le64(v string) uint64 {
	_ = v[7]
	return uint64(v[0]) | uint64(v[1])<<8 | uint64(v[2])<<16 | uint64(v[3])<<24 |
		uint64(v[4])<<32 | uint64(v[5])<<40 | uint64(v[6])<<48 | uint64(v[7])<<56
}

// decodeTakes answers reqs from strictScript's reply: per take three
// little-endian float64, allowed (1 or 0), remaining and retry in µs.
func decodeTakes(v string, reqs []*strictReq) error {
	if len(v) != 24*len(reqs) {
		return errors.New("fleet: unexpected take reply")
	}
	for i, r := range reqs {
		for k := range r.res {
			r.res[k] = int64(math.Float64frombits(le64(v[24*i+8*k:])))
		}
		r.err = nil
	}
	return nil
}

// strictScript decides a batch of strict takes, each exactly as
// takeScript decides it, in arrival order, in one atomic step at one
// instant (one TIME). KEYS: the batch's distinct keys; ARGV[1]: the takes,
// packed (see appendTake), so that neither side formats or parses a
// decimal float per take. The buckets are read by one MGET, and a bucket
// several takes hit is written once, with its last state, in the format
// takeScript and leaseScript use (the theoretical arrival time in µs as
// %.17g text, expiring when full). Returns each take's allowed (1 or 0),
// remaining and retry in µs packed in one string, three little-endian
// float64 a take (decodeTakes): one bulk reply the client reads without
// an interface value per number.
var strictScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local got = redis.call('MGET', unpack(KEYS))
local tats, dirty, out = {}, {}, {}
for i = 1, #KEYS do
  local tat = tonumber(got[i]) or now
  if tat < now then tat = now end
  tats[i] = tat
end
local a, pos = ARGV[1], 1
for j = 0, #a / 32 - 1 do
  local k, iv, burst, n
  k, iv, burst, n, pos = struct.unpack('<dddd', a, pos)
  local tat = tats[k]
  local avail = (now + burst * iv - tat) / iv
  if avail + 1e-9 < n then
    out[3 * j + 1] = 0
    out[3 * j + 2] = math.max(0, math.floor(avail + 1e-9))
    out[3 * j + 3] = math.ceil(tat + n * iv - burst * iv - now)
  else
    tat = tat + n * iv
    tats[k] = tat
    dirty[k] = true
    out[3 * j + 1] = 1
    out[3 * j + 2] = math.floor(avail - n + 1e-9)
    out[3 * j + 3] = 0
  end
end
for k in pairs(dirty) do
  local tat = tats[k]
  redis.call('SET', KEYS[k], string.format('%.17g', tat), 'PX', string.format('%d', math.ceil((tat - now) / 1000) + 1))
end
return struct.pack('<' .. string.rep('d', #out), unpack(out))
`)
