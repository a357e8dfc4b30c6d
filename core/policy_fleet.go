package core

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Fleet configures budgets shared by every server of a fleet: which keyed
// layers are fleet-wide, the Redis that holds their buckets, how servers
// lease tokens from it and what they do when it fails. core only validates
// it; package fleet reads it and builds the layers (core does no I/O).
//
// The zero Fleet (no redis) is off: every keyed layer is the server's own.
// Optional numbers are pointers, nil meaning the default, as everywhere in
// Policy. Not safe for concurrent mutation.
type Fleet struct {
	// Redis is the address (host:port) of the Redis that holds the fleet's
	// buckets, or the seed addresses of a Redis Cluster (more than one).
	// Required when any other fleet field is set.
	Redis []string `yaml:"redis,omitempty" json:"redis,omitempty"`
	// Mode is how the gate's fleet layers take: "lease" (the default and
	// the only mode for the gate: tokens leased in chunks, spent locally).
	// Strict mode, a Redis round trip per take, blocks its caller, so it is
	// an API for request handlers (fleet.Strict), never a gate layer.
	Mode string `yaml:"mode,omitempty" json:"mode,omitempty"`
	// Layers are the keyed layers shared by the fleet, among account,
	// address and match. Default: [account].
	Layers []string `yaml:"layers,omitempty" json:"layers,omitempty"`
	// Lease is the number of tokens a server leases from a fleet bucket at
	// a time. Default (nil): the layer's burst ÷ 8, at least 1, at most
	// the burst.
	Lease *uint32 `yaml:"lease,omitempty" json:"lease,omitempty"`
	// Refresh is the period of the refresher that tops up leases and
	// returns idle ones. Default 50ms.
	Refresh *Duration `yaml:"refresh,omitempty" json:"refresh,omitempty"`
	// Timeout bounds each round of Redis calls; a round that fails or
	// takes longer marks Redis unavailable until one succeeds. Default
	// 200ms.
	Timeout *Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Idle is how long a key's lease may go unused before the refresher
	// returns its unused tokens to the fleet bucket. Default 5s.
	Idle *Duration `yaml:"idle,omitempty" json:"idle,omitempty"`
	// Heartbeat is how often a server says in Redis that it is alive; a
	// server unheard of for three heartbeats is not counted live. Default
	// 1s.
	Heartbeat *Duration `yaml:"heartbeat,omitempty" json:"heartbeat,omitempty"`
	// OnFailure is what a take beyond the leased tokens does while Redis
	// is unavailable: "local" (the default: a local bucket with the
	// layer's rate ÷ live servers), "deny" or "allow".
	OnFailure string `yaml:"onFailure,omitempty" json:"onFailure,omitempty"`
	// Prefix starts the name of every Redis key the fleet writes.
	// Default "sluice".
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
}

// Fleet defaults.
const (
	DefaultFleetRefresh   = 50 * time.Millisecond
	DefaultFleetTimeout   = 200 * time.Millisecond
	DefaultFleetIdle      = 5 * time.Second
	DefaultFleetHeartbeat = time.Second
)

// Enabled reports whether the fleet is configured (it names a Redis).
func (f *Fleet) Enabled() bool { return len(f.Redis) > 0 }

// normalize fills the defaults of an enabled fleet; a disabled one stays
// as written, so that validate can tell a stray field.
func (f *Fleet) normalize() {
	if !f.Enabled() {
		return
	}
	if f.Mode == "" {
		f.Mode = "lease"
	}
	if f.Layers == nil {
		f.Layers = []string{"account"}
	}
	orDefault(&f.Refresh, Duration(DefaultFleetRefresh))
	orDefault(&f.Timeout, Duration(DefaultFleetTimeout))
	orDefault(&f.Idle, Duration(DefaultFleetIdle))
	orDefault(&f.Heartbeat, Duration(DefaultFleetHeartbeat))
	if f.OnFailure == "" {
		f.OnFailure = "local"
	}
	if f.Prefix == "" {
		f.Prefix = "sluice"
	}
}

// clone deep-copies the fleet's slices and pointers.
func (f Fleet) clone() Fleet {
	f.Redis, f.Layers = slices.Clone(f.Redis), slices.Clone(f.Layers)
	f.Lease, f.Refresh, f.Timeout, f.Idle, f.Heartbeat = cp(f.Lease), cp(f.Refresh), cp(f.Timeout), cp(f.Idle), cp(f.Heartbeat)
	return f
}

// fleetLayers maps a fleet layer name to the budget it shares.
var fleetLayers = map[string]Reason{"account": AccountLimit, "address": AddressLimit, "match": MatchLimit}

// FleetLayerReason returns the reason of the keyed layer a fleet layer
// name (account, address, match) stands for, and whether it is one.
func FleetLayerReason(name string) (Reason, bool) {
	r, ok := fleetLayers[name]
	return r, ok
}

// validateFleet checks a normalized policy's fleet section.
func (p *Policy) validateFleet(v *validator) {
	f := &p.Fleet
	if !f.Enabled() {
		if f.Mode != "" || f.Layers != nil || f.Lease != nil || f.Refresh != nil || f.Timeout != nil ||
			f.Idle != nil || f.Heartbeat != nil || f.OnFailure != "" || f.Prefix != "" {
			v.add("fleet.redis", "is required when the fleet section sets anything")
		}
		return
	}
	for i, a := range f.Redis {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			v.add(fmt.Sprintf("fleet.redis[%d]", i), fmt.Sprintf("%q is not host:port", a))
		} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			v.add(fmt.Sprintf("fleet.redis[%d]", i), fmt.Sprintf("%q has no valid port", a))
		}
	}
	switch f.Mode {
	case "lease":
	case "strict":
		v.add("fleet.mode", "strict blocks the caller on Redis, so the gate's layers cannot use it: use lease here and fleet.Strict in request handlers")
	default:
		v.add("fleet.mode", fmt.Sprintf("%q is not lease", f.Mode))
	}
	if len(f.Layers) == 0 {
		v.add("fleet.layers", "must name at least one of account, address, match")
	}
	seen := map[string]bool{}
	for i, l := range f.Layers {
		path := fmt.Sprintf("fleet.layers[%d]", i)
		r, ok := fleetLayers[l]
		switch {
		case !ok:
			v.add(path, fmt.Sprintf("%q is not account, address or match", l))
		case seen[l]:
			v.add(path, fmt.Sprintf("%q is listed twice", l))
		case p.budgetOf(r).Disabled:
			v.add(path, fmt.Sprintf("the %s layer is disabled", l))
		}
		seen[l] = true
	}
	if f.Lease != nil && *f.Lease == 0 {
		v.add("fleet.lease", "must be at least 1")
	}
	for _, d := range []struct {
		path string
		v    *Duration
	}{{"fleet.refresh", f.Refresh}, {"fleet.timeout", f.Timeout}, {"fleet.idle", f.Idle}, {"fleet.heartbeat", f.Heartbeat}} {
		if *d.v <= 0 {
			v.add(d.path, "must be positive")
		}
	}
	if *f.Idle > 0 && *f.Idle < *f.Refresh {
		v.add("fleet.idle", fmt.Sprintf("%v is shorter than fleet.refresh (%v)", f.Idle.std(), f.Refresh.std()))
	}
	switch f.OnFailure {
	case "local", "deny", "allow":
	default:
		v.add("fleet.onFailure", fmt.Sprintf("%q is not local, deny or allow", f.OnFailure))
	}
	if strings.ContainsAny(f.Prefix, "{} \t\r\n") {
		v.add("fleet.prefix", fmt.Sprintf("%q holds a brace or a space", f.Prefix))
	}
}

// budgetOf returns the budget of the keyed layer that denies with r.
func (p *Policy) budgetOf(r Reason) *Budget {
	switch r {
	case AddressLimit:
		return &p.Address
	case MatchLimit:
		return &p.Match
	}
	return &p.Account
}
