package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicedev/sluice/core"
)

// Server is what a game server needs to run its gate on the fleet that a
// policy's fleet section describes: the Fleet (start and stop it), the
// options to pass to core.NewGate, and the Redis client (closed by Close).
type Server struct {
	Fleet       *Fleet
	GateOptions []core.GateOption
	Client      redis.UniversalClient
}

// Open connects to the Redis of p's fleet section (one address: a single
// server; several: a Cluster) with timeouts no longer than the section's,
// and builds this server's Fleet, not started. name must be unique in the
// fleet ("" for a random one).
func Open(ctx context.Context, p core.Policy, name string) (*Server, error) {
	n := p.Normalized()
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if !n.Fleet.Enabled() {
		return nil, errors.New("fleet: the policy has no fleet section")
	}
	to := time.Duration(*n.Fleet.Timeout)
	c := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: n.Fleet.Redis, DialTimeout: to, ReadTimeout: to, WriteTimeout: to,
		MaxRetries: -1, // a failed round is retried by the next one, not inside it
	})
	store, err := NewRedisStore(ctx, c, n.Fleet.Prefix)
	if err != nil {
		c.Close()
		return nil, err
	}
	cfg, layers, err := ConfigFromPolicy(n, store)
	if err != nil {
		c.Close()
		return nil, err
	}
	cfg.Server = name
	f, err := New(cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	return &Server{Fleet: f, GateOptions: f.GateOptions(layers...), Client: c}, nil
}

// Close stops the fleet (returning its leases) and closes the client.
func (s *Server) Close() error {
	s.Fleet.Stop()
	return s.Client.Close()
}
