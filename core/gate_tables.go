package core

import "net/netip"

// TableStats is the occupancy of one of a gate's bounded tables at a time:
// a plain value, read by Gate.Tables for metrics and diagnostics.
//
// The gate's own tables are "sessions" (open sessions), "accounts" and
// "addresses" (the strike, lockout and in-flight state an account or
// source address keeps across its sessions). The keyed layers' bucket
// tables are "account_buckets", "address_buckets" and "match_buckets"
// (absent when the layer is disabled). A refusal for want of room in a
// gate table is counted in GateStats (reason TableFull on the "(session)"
// row); TableFull, Evicted and Swept are the keyed layers' own counters and
// stay 0 for the gate's tables.
type TableStats struct {
	Name           string
	Tracked        int    // entries held now
	Capacity       int    // the most entries the table holds
	ActiveLockouts int    // entries locked out at the time asked
	TableFull      uint64 // takes refused with TableFull (keyed layers)
	Evicted        uint64 // idle keys evicted to make room (keyed layers)
	Swept          uint64 // idle keys removed by sweeps (keyed layers)
}

// Tables returns the occupancy of every table of the gate at now: the
// gate's own tables first, then the enabled keyed layers (see TableStats).
// It takes the gate's mutex for the entity tables and scans each keyed
// layer's table (a cost proportional to its capacity): call it from a
// scrape or a report, never per message.
func (g *Gate) Tables(now int64) []TableStats {
	out := make([]TableStats, 0, 6)
	g.mu.Lock()
	out = append(out,
		TableStats{Name: "sessions", Tracked: len(g.slots) - len(g.free), Capacity: len(g.slots)},
		g.accounts.stats("accounts", now),
		g.addresses.stats("addresses", now))
	g.mu.Unlock()
	for _, l := range []struct {
		name string
		k    keyedBuckets
	}{{"account_buckets", g.account}, {"address_buckets", g.address}, {"match_buckets", g.match}} {
		lk, ok := l.k.(*limiterKeyed)
		if !ok {
			continue
		}
		r := lk.l.ReportAt(now)
		out = append(out, TableStats{
			Name: l.name, Tracked: r.Tracked, Capacity: r.Bound, ActiveLockouts: r.ActiveLockouts,
			TableFull: r.TableFullDenials, Evicted: r.Evicted, Swept: r.Swept,
		})
	}
	return out
}

// stats reads an entity table; the caller holds the gate's mutex.
func (t *entityTable) stats(name string, now int64) TableStats {
	s := TableStats{Name: name, Tracked: len(t.m), Capacity: t.max}
	for _, e := range t.m {
		if e.lock.locked(now) {
			s.ActiveLockouts++
		}
	}
	return s
}

// SessionSource returns the source the gate keys an open session's
// pre-auth state by: its IPv4 address as a /32, or the /64 of its IPv6
// address (the gate keeps no more of it, nor the port). False when the
// session is not open. Lock-free, for observers that name the source of
// what they report (the security log); it never changes the session.
func (g *Gate) SessionSource(h Session) (netip.Prefix, bool) {
	s := g.lookup(h)
	if s == nil {
		return netip.Prefix{}, false
	}
	k := s.addrKey
	if k>>32 == 0xffff_ffff {
		a := netip.AddrFrom4([4]byte{byte(k >> 24), byte(k >> 16), byte(k >> 8), byte(k)})
		return netip.PrefixFrom(a, 32), true
	}
	var b [16]byte
	for i := range 8 {
		b[i] = byte(k >> (56 - 8*i))
	}
	return netip.PrefixFrom(netip.AddrFrom16(b), 64), true
}
