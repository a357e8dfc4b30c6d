package cli

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/server"
	"github.com/sluicedev/sluice/scenarios"
	"github.com/spf13/cobra"
)

func newServeCmd() *cobra.Command {
	var policyFile, scenarioFile, variant, listen, wsListen, udpListen, record, hashKey string
	var maxConns int
	var tick float64
	var expose bool
	var obs observeFlags
	c := &cobra.Command{
		Use:   "serve (--policy FILE | --scenario FILE [--variant NAME]) [--listen 127.0.0.1:PORT] [--ws 127.0.0.1:PORT] [--udp 127.0.0.1:PORT]",
		Short: "Run the reference game server with a policy, for any client",
		Long: `serve runs the reference loopback game server (package loadgen/server) with
the given policy until interrupted (Ctrl-C or SIGTERM), then shuts down
gracefully, telling each client why. It speaks the reference protocol
documented in package loadgen/wire. Port 0 picks a free port, printed on
start.

The policy is a policy file (--policy), or a scenario's policy variant
(--scenario FILE --variant NAME; the variant may be left out when the
scenario has one): the server a 'sluice run --target' of that scenario
assumes, so that the run's thresholds are those of the policy served.

--ws ADDR also serves the reference protocol over WebSocket (ws://ADDR/,
one binary message per frame; see docs/transports.md), under the same
policy and limits. --udp ADDR serves it over UDP (one frame per datagram,
sessions opened by a stateless cookie handshake; see docs/transports.md).

The listen addresses must be loopback addresses unless --expose is given.
--expose serves any address, for load generators on other machines: then
anyone who can reach that address can connect and send traffic, and the
server's per-address limits see each generator's host as one address.

--metrics ADDR serves Prometheus metrics of the gate on /metrics and the
runtime's profiles on /debug/pprof/ (see docs/metrics.md); the address must
be loopback unless --metrics-allow-non-loopback is given. The security log
(floods, lockouts, disconnects and table-full refusals, naming session,
account and source) goes to stderr as --log-format text or json, at
--log-level and above (off: none), keeping one record in --log-sample.

With --record FILE the gate records every Open, Authenticate, read,
message (with its decision, never its payload) and Close, and the server
each session's population, into a trace (docs/traces.md); the writer runs
on its own goroutine and never makes a message wait: when it falls behind,
records are dropped and counted in the trace. --record-hash-key KEYFILE
records accounts and addresses as keyed hashes instead.

Exit codes: 0 stopped by Ctrl-C or SIGTERM, 1 the policy cannot be read
or is not valid, or the server failed (the address is taken), 2 usage
(including a bad --listen, --tick, --max-conns, --metrics or --log-*
value).`,
		Example: `  sluice serve --policy scenarios/policies/game.yaml
  sluice serve --policy scenarios/policies/game.yaml --listen 127.0.0.1:7777
  sluice serve --scenario scenarios/quickstart.yaml --variant balanced --listen 127.0.0.1:7777
  sluice serve --policy scenarios/policies/game.yaml --listen 127.0.0.1:7777 --ws 127.0.0.1:7778
  sluice serve --policy scenarios/policies/game.yaml --listen 127.0.0.1:7777 --udp 127.0.0.1:7779
  sluice serve --policy scenarios/policies/game.yaml --listen 0.0.0.0:7777 --expose
  sluice serve --policy scenarios/policies/game.yaml --metrics 127.0.0.1:9100 --log-format json
  sluice serve --policy scenarios/policies/game.yaml --record saturday.trace`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			p, what, err := servePolicy(policyFile, scenarioFile, variant)
			if err != nil {
				return err
			}
			if err := obs.check(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg := server.Config{Policy: p, Addr: listen, MaxConns: maxConns, TickRate: tick, AllowNonLoopback: expose, WebSocket: server.WSConfig{Addr: wsListen}, UDP: server.UDPConfig{Addr: udpListen}}
			var rec *serveRecording
			if record != "" {
				if rec, err = startRecording(record, hashKey, p); err != nil {
					return err
				}
				cfg.GateOptions = append(cfg.GateOptions, core.WithRecorder(rec.buf))
			}
			s, err := server.New(cfg)
			if err != nil {
				if rec != nil {
					_ = rec.stop(io.Discard)
				}
				return serveError(c, listen, err)
			}
			o, err := obs.attach(s.Gate(), c.ErrOrStderr())
			if err != nil {
				if rec != nil {
					_ = rec.stop(io.Discard)
				}
				return err
			}
			defer o.close()
			err = s.Serve(ctx, func(s *server.Server) {
				fmt.Fprintf(c.OutOrStdout(), "sluice: serving %s on %s (Ctrl-C to stop)\n", what, s.Addr())
				if a := s.WSAddr(); a.IsValid() {
					fmt.Fprintf(c.OutOrStdout(), "sluice: WebSocket on ws://%s/\n", a)
				}
				if a := s.UDPAddr(); a.IsValid() {
					fmt.Fprintf(c.OutOrStdout(), "sluice: UDP on %s\n", a)
				}
				if o.ln != nil {
					fmt.Fprintf(c.OutOrStdout(), "sluice: metrics on http://%s/metrics\n", o.ln.Addr())
				}
				if serveStarted != nil {
					serveStarted(s)
				}
			})
			if rec != nil {
				// The server has stopped: its last records are in the
				// buffer, which the trace takes before it is closed.
				if rerr := rec.stop(c.OutOrStdout()); err == nil && rerr != nil {
					return rerr
				}
			}
			return serveError(c, listen, err)
		},
	}
	c.Flags().StringVar(&policyFile, "policy", "", "policy file (YAML or JSON)")
	c.Flags().StringVar(&scenarioFile, "scenario", "", "serve a policy variant of this scenario instead of --policy")
	c.Flags().StringVar(&variant, "variant", "", "with --scenario: the variant to serve (needed when the scenario has several)")
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on (loopback unless --expose)")
	c.Flags().StringVar(&wsListen, "ws", "", "also serve over WebSocket on this address (loopback unless --expose)")
	c.Flags().StringVar(&udpListen, "udp", "", "also serve over UDP on this address (loopback unless --expose)")
	c.Flags().BoolVar(&expose, "expose", false, "allow a --listen address that is not loopback (reachable by other machines)")
	c.Flags().IntVar(&maxConns, "max-conns", 0, "most connections at once (0: the server's default)")
	c.Flags().Float64Var(&tick, "tick", 0, "tick rate in Hz (0: the server's default, 30)")
	obs.register(c)
	c.Flags().StringVar(&record, "record", "", "write a trace of every session and message the gate decides to this file (see sluice trace)")
	c.Flags().StringVar(&hashKey, "record-hash-key", "", "with --record: record accounts and addresses as keyed hashes, keyed by this file's bytes (at least 16)")
	return c
}

// servePolicy returns the policy serve runs and how to name it: the
// policy file, or the scenario's variant.
func servePolicy(policyFile, scenarioFile, variant string) (core.Policy, string, error) {
	switch {
	case policyFile != "" && scenarioFile != "":
		return core.Policy{}, "", usageError{errors.New("--policy and --scenario: give one")}
	case variant != "" && scenarioFile == "":
		return core.Policy{}, "", usageError{errors.New("--variant names a variant of --scenario FILE")}
	case scenarioFile == "":
		p, err := loadPolicyFlag(policyFile)
		return p, policyFile, err
	}
	s, err := scenarios.Load(scenarioFile)
	if err != nil {
		return core.Policy{}, "", err
	}
	vs, err := s.Policies()
	if err != nil {
		return core.Policy{}, "", err
	}
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Name
		if v.Name == variant || variant == "" && len(vs) == 1 {
			return v.Policy, fmt.Sprintf("%s variant %q", scenarioFile, v.Name), nil
		}
	}
	if variant == "" {
		return core.Policy{}, "", usageError{fmt.Errorf("--scenario %s has %d policy variants: name one with --variant (%s)", scenarioFile, len(vs), strings.Join(names, ", "))}
	}
	return core.Policy{}, "", usageError{fmt.Errorf("--variant %q: %s has no such policy variant (have %s)", variant, scenarioFile, strings.Join(names, ", "))}
}

// serveStarted, when not nil, is called with the server once it listens
// (tests read its gate beside what they scrape).
var serveStarted func(*server.Server)

// serveError maps the server's errors to the command's.
func serveError(c *cobra.Command, listen string, err error) error {
	if errors.Is(err, server.ErrNonLoopback) {
		// The server's message names a Go config field; the
		// command has no way to set it, on purpose.
		flag, addr := "listen", listen
		if ce := (*server.ConfigError)(nil); errors.As(err, &ce) && ce.Field == "WebSocket.Addr" {
			flag, addr = "ws", c.Flags().Lookup("ws").Value.String()
		}
		if ce := (*server.ConfigError)(nil); errors.As(err, &ce) && ce.Field == "UDP.Addr" {
			flag, addr = "udp", c.Flags().Lookup("udp").Value.String()
		}
		return usageError{fmt.Errorf("--%s %s: sluice serve listens on loopback addresses only (127.0.0.0/8, ::1 or localhost) unless --expose is given, which opens it to whoever can reach it", flag, addr)}
	}
	return serveFlagError(c, err)
}

// serveFlags maps the server.Config fields that serve's flags set to the
// flags.
var serveFlags = map[string]string{"Addr": "listen", "TickRate": "tick", "MaxConns": "max-conns", "WebSocket.Addr": "ws", "UDP.Addr": "udp"}

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
