package scenarios

import (
	"fmt"

	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/reports"
	"gopkg.in/yaml.v3"
)

// RedisStart is the scenario's redis: value that has a loopback run of
// several servers start its own redis-server on a free loopback port.
const RedisStart = loadgen.RedisStart

// checkServers checks servers: (the scenario's and each variant's) and
// redis:, naming the field.
func (s *Scenario) checkServers(root *yaml.Node) error {
	bad := func(n int) bool { return n < 0 || n > behave.MaxServers }
	msg := fmt.Sprintf("must be between 1 and %d (game servers)", behave.MaxServers)
	if bad(s.Servers) {
		return s.fail(root, "servers", []any{"servers"}, msg)
	}
	many := s.Servers > 1
	for i, v := range s.Variants {
		if bad(v.Servers) {
			return s.fail(root, fmt.Sprintf("variants[%d].servers", i), []any{"variants", i, "servers"}, msg)
		}
		many = many || v.Servers > 1
	}
	switch {
	case s.Redis != "" && s.Redis != RedisStart:
		return s.fail(root, "redis", []any{"redis"}, fmt.Sprintf("%q is not %s (or leave it out: the policy's fleet.redis)", s.Redis, RedisStart))
	case s.Redis != "" && !many:
		return s.fail(root, "redis", []any{"redis"}, "is for a scenario of several servers (servers: N)")
	case many && s.Target != "":
		return s.fail(root, "servers", []any{"servers"}, "are started by the run: a target is one server sluice does not start")
	}
	return nil
}

// serversOf is v's number of game servers: its own, else the scenario's,
// else 1.
func (s *Scenario) serversOf(v Variant) int {
	switch {
	case v.Servers > 0:
		return v.Servers
	case s.Servers > 0:
		return s.Servers
	}
	return 1
}

// fleetRun returns the servers and the Redis of variant v's run.
func fleetRun(s *Scenario, v NamedPolicy) (int, string) {
	if v.Servers < 2 {
		return v.Servers, ""
	}
	return v.Servers, s.Redis
}

// gameServers is what each game server of r admitted, by population
// label (nil for a run of one server).
func gameServers(r *loadgen.Result) []reports.GameServer {
	var out []reports.GameServer
	for _, sc := range r.Servers {
		gs := reports.GameServer{Name: sc.Name, Admitted: map[string]int64{}}
		for pi, n := range sc.Admitted {
			if n > 0 {
				gs.Admitted[r.Labels[pi]] = n
			}
		}
		out = append(out, gs)
	}
	return out
}
