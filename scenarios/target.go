package scenarios

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/sluicedev/sluice/reports"
)

// A target is a server the run did not start: another process on this
// machine (sluice serve) or on another one. sluice cannot set its policy
// nor read its counters, so a run against one drives one variant, the
// policy the user says the server runs, and measures what its clients see
// (see loadgen.Remote and reports.Run.Target).

// checkTarget checks the form of a target, HOST:PORT with a port from 1
// to 65535, without resolving HOST.
func checkTarget(t string) error {
	host, port, err := net.SplitHostPort(t)
	if err != nil {
		return fmt.Errorf("%q is not HOST:PORT", t)
	}
	if host == "" {
		return fmt.Errorf("%q names no host", t)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("%q: the port must be a number from 1 to 65535", t)
	}
	return nil
}

// resolveTarget returns the address of target: itself when HOST is an IP
// address, else the first address HOST resolves to.
func resolveTarget(ctx context.Context, target string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(target); err == nil {
		return ap, nil
	}
	host, port, _ := net.SplitHostPort(target)
	n, _ := strconv.ParseUint(port, 10, 16)
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("target %s: %w", target, err)
	}
	if len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("target %s: %s has no address", target, host)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(n)), nil
}

// unmeasuredOnTarget says why metric cannot be measured over kinds in a
// run against a target ("" when it can): what became of an input, which
// gets no reply, only the server's own counts say.
func unmeasuredOnTarget(r *reports.Results, metric string, unknown int64) string {
	if r.Run.Target == "" || unknown == 0 || !fateMetrics[metric] {
		return ""
	}
	return fmt.Sprintf("%s needs what the server decided on %d inputs (which get no reply), and the server at %s was not read", metric, unknown, r.Run.Target)
}

// fateMetrics are the metrics that count what the server decided on each
// message sent: none is known for an input whose server was not read.
var fateMetrics = map[string]bool{
	"accepted": true, "dropped": true, "drop_rate": true, "limited_rate": true,
	"admitted_per_s": true, "admitted_bytes_per_s": true,
}
