package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/spf13/cobra"
)

func newServeCmd() *cobra.Command {
	var policyFile, listen, record, hashKey string
	var maxConns int
	var tick float64
	c := &cobra.Command{
		Use:   "serve --policy FILE [--listen 127.0.0.1:PORT]",
		Short: "Run the reference game server with a policy, for any client",
		Long: `serve runs the reference loopback game server (package loadgen/server) with
the given policy until interrupted (Ctrl-C or SIGTERM), then shuts down
gracefully, telling each client why. It speaks the reference protocol
documented in package loadgen/wire. The listen address must be a loopback
address; port 0 picks a free port, printed on start.

With --record FILE the gate records every Open, Authenticate, read,
message (with its decision, never its payload) and Close, and the server
each session's population, into a trace (docs/traces.md); the writer runs
on its own goroutine and never makes a message wait: when it falls behind,
records are dropped and counted in the trace. --record-hash-key KEYFILE
records accounts and addresses as keyed hashes instead.

Exit codes: 0 stopped by Ctrl-C or SIGTERM, 1 the policy cannot be read
or is not valid, or the server failed (the address is taken), 2 usage
(including a bad --listen, --tick or --max-conns value).`,
		Example: `  sluice serve --policy scenarios/policies/game.yaml
  sluice serve --policy scenarios/policies/game.yaml --listen 127.0.0.1:7777
  sluice serve --policy scenarios/policies/game.yaml --record saturday.trace`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := loadPolicyFlag(policyFile)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg := server.Config{Policy: p, Addr: listen, MaxConns: maxConns, TickRate: tick}
			var rec *serveRecording
			if record != "" {
				if rec, err = startRecording(record, hashKey, p); err != nil {
					return err
				}
				cfg.GateOptions = append(cfg.GateOptions, core.WithRecorder(rec.buf))
			}
			err = server.Run(ctx, cfg, func(a netip.AddrPort) {
				fmt.Fprintf(c.OutOrStdout(), "sluice: serving %s on %s (Ctrl-C to stop)\n", policyFile, a)
			})
			if rec != nil {
				if rerr := rec.stop(c.OutOrStdout()); err == nil && rerr != nil {
					return rerr
				}
			}
			if errors.Is(err, server.ErrNonLoopback) {
				// The server's message names a Go config field; the
				// command has no way to set it, on purpose.
				return usageError{fmt.Errorf("--listen %s: sluice serve listens on loopback addresses only (127.0.0.0/8, ::1 or localhost)", listen)}
			}
			return serveFlagError(c, err)
		},
	}
	c.Flags().StringVar(&policyFile, "policy", "", "policy file (YAML or JSON)")
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address to listen on")
	c.Flags().IntVar(&maxConns, "max-conns", 0, "most connections at once (0: the server's default)")
	c.Flags().Float64Var(&tick, "tick", 0, "tick rate in Hz (0: the server's default, 30)")
	c.Flags().StringVar(&record, "record", "", "write a trace of every session and message the gate decides to this file (see sluice trace)")
	c.Flags().StringVar(&hashKey, "record-hash-key", "", "with --record: record accounts and addresses as keyed hashes, keyed by this file's bytes (at least 16)")
	return c
}

// serveFlags maps the server.Config fields that serve's flags set to the
// flags.
var serveFlags = map[string]string{"Addr": "listen", "TickRate": "tick", "MaxConns": "max-conns"}

// serveFlagError returns err as a usage error naming the flag when it is
// about a flag's value: a *server.ConfigError for a field a flag sets, or
// a listen address net cannot use (a bad port). Other errors (the address
// is taken) are returned as they are.
func serveFlagError(c *cobra.Command, err error) error {
	var ce *server.ConfigError
	if errors.As(err, &ce) {
		if name, ok := serveFlags[ce.Field]; ok {
			return usageError{fmt.Errorf("--%s %s: %s", name, c.Flags().Lookup(name).Value, ce.Msg)}
		}
	}
	var ae *net.AddrError
	if errors.As(err, &ae) {
		return usageError{fmt.Errorf("--listen %s: %v", c.Flags().Lookup("listen").Value, ae)}
	}
	return err
}
