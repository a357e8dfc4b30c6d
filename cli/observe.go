package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/metrics"
)

// observeFlags are serve's flags for metrics and the security log.
type observeFlags struct {
	metricsAddr      string
	allowNonLoopback bool
	logFormat        string
	logLevel         string
	logSample        uint64
}

func (f *observeFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&f.metricsAddr, "metrics", "", "serve /metrics and /debug/pprof/ on this loopback address (host:port; empty: off)")
	c.Flags().BoolVar(&f.allowNonLoopback, "metrics-allow-non-loopback", false, "let --metrics listen on an address that is not loopback")
	c.Flags().StringVar(&f.logFormat, "log-format", "text", "security log format: text or json")
	c.Flags().StringVar(&f.logLevel, "log-level", "info", "security log level: debug, info, warn, error or off")
	c.Flags().Uint64Var(&f.logSample, "log-sample", 1, "write one security-log record in N of each event and reason (1: all)")
}

// logLevels are --log-level's values; off is above every record's level.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError, "off": slog.LevelError + 100}

// check refuses bad values before anything starts.
func (f *observeFlags) check() error {
	if f.logFormat != "text" && f.logFormat != "json" {
		return usageError{fmt.Errorf("--log-format %s: not text or json", f.logFormat)}
	}
	if _, ok := logLevels[f.logLevel]; !ok {
		return usageError{fmt.Errorf("--log-level %s: not debug, info, warn, error or off", f.logLevel)}
	}
	if f.logSample == 0 {
		return usageError{fmt.Errorf("--log-sample 0: must be at least 1")}
	}
	return nil
}

// observing is what attach started: the security log and, with
// --metrics, the HTTP endpoint and the gate's collector.
type observing struct {
	log  *metrics.SecurityLog
	coll *metrics.GateCollector
	ln   net.Listener
	srv  *http.Server
}

// attach starts the security log on g, writing to w, and the metrics
// endpoint when asked for.
func (f *observeFlags) attach(g *core.Gate, w io.Writer) (*observing, error) {
	o := &observing{}
	if f.metricsAddr != "" {
		ln, err := metrics.Listen(f.metricsAddr, f.allowNonLoopback)
		if errors.Is(err, metrics.ErrNonLoopback) {
			return nil, usageError{fmt.Errorf("--metrics %s: not a loopback address (127.0.0.0/8, ::1 or localhost); --metrics-allow-non-loopback exposes it", f.metricsAddr)}
		}
		var ae *net.AddrError
		if errors.As(err, &ae) {
			return nil, usageError{fmt.Errorf("--metrics %s: %v", f.metricsAddr, ae)}
		}
		if err != nil {
			return nil, fmt.Errorf("--metrics %s: %w", f.metricsAddr, err)
		}
		o.ln = ln
	}
	opts := &slog.HandlerOptions{Level: logLevels[f.logLevel]}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if f.logFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	var sample func(metrics.SecurityEvent) bool
	if f.logSample > 1 {
		sample = metrics.EveryNth(f.logSample)
	}
	o.log = metrics.NewSecurityLog(g, h, metrics.SecurityLogOptions{Sample: sample})
	if o.ln != nil {
		o.coll = metrics.NewGateCollector(g, metrics.GateCollectorOptions{})
		reg := prometheus.NewRegistry()
		reg.MustRegister(o.coll, o.log,
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		o.srv = &http.Server{Handler: metrics.NewMux(reg), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = o.srv.Serve(o.ln) }() // returns ErrServerClosed on close
	}
	return o, nil
}

// close stops the endpoint and the security log, writing what it holds;
// a log handler that does not return within a second is left behind.
func (o *observing) close() {
	if o.srv != nil {
		_ = o.srv.Close()
		o.coll.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = o.log.Close(ctx)
}
