package metrics

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrNonLoopback is wrapped by the error of Listen for an address that is
// not loopback when non-loopback addresses are not allowed.
var ErrNonLoopback = errors.New("metrics: address is not loopback")

// Listen listens on addr (host:port) for the metrics endpoint. Unless
// allowNonLoopback is set, the host must be a loopback IP literal or
// "localhost": /debug/pprof/ tells whoever reaches it a great deal about
// the process, so exposing it is a decision to make explicitly.
func Listen(addr string, allowNonLoopback bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if !allowNonLoopback && host != "localhost" {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Unmap().IsLoopback() {
			return nil, fmt.Errorf("%w: %q (127.0.0.0/8, ::1 or localhost)", ErrNonLoopback, addr)
		}
	}
	return net.Listen("tcp", addr)
}

// NewMux returns the endpoint's handler: /metrics serves what g gathers in
// the Prometheus exposition formats (promhttp, content negotiated), and
// /debug/pprof/ the runtime's profiles (net/http/pprof).
func NewMux(g prometheus.Gatherer) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
