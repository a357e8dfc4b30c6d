package fleet

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedev/sluice/core"
)

// Strict is strict mode: every take is one atomic GCRA script on Redis
// (takeScript, by EVALSHA), so the fleet never admits more than the
// bucket allows, at the price of a round trip per take. It blocks its
// caller for that round trip: use it where the client waits for an answer
// anyway (a purchase, a trade), never on the gate's input path.
//
// Takes of concurrent callers are batched: a few sender goroutines each
// gather the takes waiting (up to MaxBatch) and send them in one round
// trip (on a single Redis one script call deciding each take in turn, on
// a Cluster a pipeline of one script call per take), so throughput grows
// with the callers instead of one round trip per take. Start them with NewStrict; Close stops them. Safe for
// concurrent use.
type Strict struct {
	c      redis.UniversalClient
	prefix string
	in     chan *strictReq
	wg     sync.WaitGroup
	once   sync.Once
	pool   sync.Pool
	closed chan struct{}
	// cluster: keys may be on different nodes, so a batch is a pipeline of
	// takeScript; on a single Redis it is one takeManyScript.
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
	res  []int64
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
	for _, sc := range []*redis.Script{takeScript, takeManyScript} {
		if err := sc.Load(ctx, c).Err(); err != nil {
			return nil, err
		}
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
	r.ctx, r.res = nil, r.res[:0]
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
	batch := make([]*strictReq, 0, maxBatch)
	cmds := make([]*redis.Cmd, 0, maxBatch)
	for {
		batch = batch[:0]
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
		s.exec(batch, cmds[:0])
	}
}

// exec sends one batch of takes and answers each; on NOSCRIPT (a
// restarted Redis) it loads the scripts and sends the batch again once.
func (s *Strict) exec(batch []*strictReq, cmds []*redis.Cmd) {
	ctx := context.Background() // one caller's deadline must not fail the others' takes
	for try := 0; ; try++ {
		var err error
		if s.cluster {
			err = s.execPipeline(ctx, batch, cmds)
		} else {
			err = s.execMany(ctx, batch)
		}
		if isNoScript(err) && try == 0 {
			if takeScript.Load(ctx, s.c).Err() == nil && takeManyScript.Load(ctx, s.c).Err() == nil {
				continue
			}
		}
		for _, r := range batch {
			if r.err == nil && err != nil {
				r.err = err
			}
			r.done <- struct{}{}
		}
		return
	}
}

// execMany decides the batch in one takeManyScript call.
func (s *Strict) execMany(ctx context.Context, batch []*strictReq) error {
	keys := make([]string, len(batch))
	args := make([]any, 0, 3*len(batch))
	for i, r := range batch {
		keys[i] = r.key
		args = append(args, 1e6/r.lim.Rate, r.lim.Burst, r.n)
	}
	v, err := takeManyScript.EvalSha(ctx, s.c, keys, args...).Int64Slice()
	if err == nil && len(v) != 3*len(batch) {
		err = errors.New("fleet: unexpected take reply")
	}
	if err != nil {
		return err
	}
	for i, r := range batch {
		r.res, r.err = append(r.res[:0], v[3*i:3*i+3]...), nil
	}
	return nil
}

// execPipeline decides the batch in one pipeline of takeScript calls.
func (s *Strict) execPipeline(ctx context.Context, batch []*strictReq, cmds []*redis.Cmd) error {
	p := s.c.Pipeline()
	cmds = cmds[:0]
	for _, r := range batch {
		cmds = append(cmds, takeScript.EvalSha(ctx, p, []string{r.key}, 1e6/r.lim.Rate, r.lim.Burst, r.n))
	}
	_, err := p.Exec(ctx)
	if isNoScript(err) {
		return err
	}
	for i, r := range batch {
		v, err := cmds[i].Int64Slice()
		if err == nil && len(v) != 3 {
			err = errors.New("fleet: unexpected take reply")
		}
		r.res, r.err = append(r.res[:0], v...), err
	}
	return nil
}
