package server

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/loadgen/wire"
)

// Errors. Configuration errors are *ConfigError values that wrap ErrConfig;
// test them with errors.Is.
var (
	// ErrConfig is wrapped by every configuration error.
	ErrConfig = errors.New("server: invalid config")
	// ErrNonLoopback: the listen address is not a loopback address and
	// Config.AllowNonLoopback is not set.
	ErrNonLoopback = errors.New("server: listen address is not loopback")
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("server: already started")
	// ErrClosed: the server was shut down.
	ErrClosed = errors.New("server: closed")
)

// ConfigError names the Config field that is wrong. It wraps ErrConfig and,
// for a bad listen address, ErrNonLoopback or the parse error.
type ConfigError struct {
	Field string
	Msg   string
	Err   error
}

func (e *ConfigError) Error() string { return "server: config: " + e.Field + ": " + e.Msg }

// Unwrap returns ErrConfig and the underlying error, if any.
func (e *ConfigError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrConfig, e.Err}
	}
	return []error{ErrConfig}
}

// Defaults for the zero fields of Config.
const (
	DefaultAddr           = "127.0.0.1:0"
	DefaultMaxConns       = 1024
	DefaultTickRate       = 30.0 // Hz
	DefaultQueueSize      = 16384
	DefaultWriteBuffer    = 8192
	DefaultIdleTimeout    = 30 * time.Second
	DefaultFrameTimeout   = 5 * time.Second
	DefaultHelloTimeout   = 10 * time.Second
	DefaultDrainTimeout   = time.Second
	DefaultWriteTimeout   = 5 * time.Second
	DefaultPingChannel    = "ping"
	DefaultPingRate       = 10.0 // pongs per second per connection without a ping channel
	DefaultMaxPopulations = 64
	// MinWriteBuffer is the smallest WriteBuffer: room for one reply.
	MinWriteBuffer = wire.ReplySize
	// MaxTimeout bounds IdleTimeout, FrameTimeout, HelloTimeout, WriteTimeout and DrainTimeout: a
	// deadline is the monotonic clock plus a timeout, and a century keeps
	// that far from overflow (time.Duration(math.MaxInt64), a natural way
	// to write "never", would wrap into the past and close at once).
	MaxTimeout = 100 * 365 * 24 * time.Hour
)

// Config configures a Server. The zero value of every field but Policy
// means its default; Policy's zero value is a valid policy that gates only
// the transport (a client can then send nothing but Hello and Ping). A
// Config is plain data, copied by New.
type Config struct {
	// Policy is the gate's policy. A frame's channel byte (the Input's
	// channel, the Request's kind) is the index of a channel in
	// Policy.Channels.
	Policy core.Policy
	// GateOptions are passed to core.NewGate.
	GateOptions []core.GateOption

	// Addr is the TCP listen address; default 127.0.0.1:0 (port 0 picks a
	// free port: see Server.Addr). The host must be a loopback IP literal
	// or "localhost" unless AllowNonLoopback is set.
	Addr string
	// AllowNonLoopback permits a listen address that is not loopback. The
	// harness never sets it.
	AllowNonLoopback bool
	// WebSocket configures a second listener, for clients that speak the
	// reference protocol over WebSocket (see WSConfig); its zero value
	// listens on none.
	WebSocket WSConfig
	// UDP configures a third listener, for clients that speak the
	// reference protocol over UDP (see UDPConfig); its zero value listens
	// on none.
	UDP UDPConfig

	// MaxConns is the most connections open at once; an extra one is
	// accepted, sent a Disconnect with reason TableFull and closed at
	// once, and counted (ConnStats.Refused).
	// Default 1024. The policy's Tables.Sessions bounds the gate's own
	// sessions; connections beyond it are refused by the gate (TableFull).
	MaxConns int
	// ReadBuffer is each connection's framer buffer in bytes, fixed at
	// accept; default 2 × the framer's maximum frame (see Server.MaxFrame).
	ReadBuffer int
	// WriteBuffer bounds the bytes waiting to be written to one connection
	// (replies and pongs); a connection whose client does not read them is
	// disconnected with reason QueueFull when the next frame would not
	// fit. Default 8192, or more when the policy lets a session have many
	// requests pending: one tick answers all of them at once, so New
	// needs room for twice the policy's queue.commands replies, and
	// refuses a WriteBuffer given smaller than that.
	WriteBuffer int
	// SendBuffer, when positive, sets SO_SNDBUF of each accepted
	// connection (tests use it to make the kernel's own buffering of
	// replies small); 0 leaves the OS default.
	SendBuffer int

	// IdleTimeout closes a connection that completes no frame for this
	// long, including one that never says Hello; the close comes at most
	// an eighth of it later. Default 30s.
	IdleTimeout time.Duration
	// HelloTimeout closes a connection that has not said Hello this long
	// after it was accepted (the Disconnect's reason is 0, a timeout), so
	// connections that never authenticate cannot hold the server's slots
	// by pinging within IdleTimeout; the close comes at most an eighth of
	// it later. Default 10s.
	HelloTimeout time.Duration
	// DrainTimeout bounds how long a connection whose client has
	// half-closed it (shut down its sending side: the server reads end of
	// stream) is kept open so that the requests it had admitted are
	// answered; it is closed as soon as they are, or when this has passed,
	// or at shutdown's last tick. A client that closes with nothing owed is
	// closed at once. Default 1s.
	DrainTimeout time.Duration
	// MaxTokens bounds the long Hello tokens (8 bytes or more that are not
	// a canonical decimal account) the server names accounts for (see
	// Tokens); a Hello with a new one past it is refused with reason
	// TableFull. Default DefaultMaxTokens.
	MaxTokens int
	// FrameTimeout closes a connection holding a partial frame for this
	// long since the frame's first bytes arrived (slowloris, lying length
	// prefixes); the close comes at most an eighth of it later. Default 5s.
	FrameTimeout time.Duration
	// WriteTimeout closes a connection when one write of its buffered
	// frames (at most WriteBuffer bytes) does not complete within it (or
	// within at most half as long again): a client that reads too slowly
	// or not at all. Default 5s.
	WriteTimeout time.Duration

	// TickRate is the simulation tick rate in Hz; default 30.
	TickRate float64
	// QueueSize bounds the commands (accepted inputs and requests) waiting
	// for the next tick, over all connections; a message that finds it
	// full is refused with reason QueueFull. Default 16384.
	QueueSize int

	// PingChannel names the policy channel a Ping is checked on (as a
	// frame of that channel); default "ping". When the policy has no such
	// channel, pings are answered at most PingRate per second per
	// connection (burst PingRate, at least 1) by a bucket of the server's
	// own, and the excess is dropped and counted with reason FrameLimit.
	PingChannel string
	// PingRate is that bucket's rate; default 10.
	PingRate float64

	// NoLimits bypasses limiting entirely, to measure what the gate costs:
	// no gate call is made (no session is opened, no read or frame is
	// checked, no request is marked done, the gate never steps), and
	// pings are not limited by the server's own bucket either. Frames are
	// still decoded and handled: every well-formed input, request and
	// ping is accepted (and queued, answered, counted), the first Hello
	// authenticates; frames that do not decode, frames of the wrong class
	// for their channel, frames naming no channel and stray Hellos are
	// dropped as Malformed (without strikes), an oversize frame still
	// disconnects, and a full tick queue still refuses (QueueFull). Never
	// for production: it is a benchmark baseline.
	NoLimits bool

	// MaxPopulations bounds the distinct Hello labels counted separately;
	// later labels are counted under "(other)". Default 64.
	MaxPopulations int
	// MatchOf, if set, returns the match id (core.Message.Match) of an
	// authenticated connection from its population label (as counted:
	// PopulationOther for a label beyond MaxPopulations or not printable)
	// and account, once at Hello. nil: every message has match 0 (no
	// match bucket).
	MatchOf func(population string, account uint64) uint64
	// Logf, if set, receives one line per unexpected event (accept
	// errors). nil: silent.
	Logf func(format string, args ...any)
}

// normalize fills defaults and validates, checking the listen address last.
func (c *Config) normalize() error {
	c.Addr = cmp.Or(c.Addr, DefaultAddr)
	c.MaxConns = cmp.Or(c.MaxConns, DefaultMaxConns)
	c.WriteBuffer = cmp.Or(c.WriteBuffer, DefaultWriteBuffer)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.FrameTimeout = cmp.Or(c.FrameTimeout, DefaultFrameTimeout)
	c.HelloTimeout = cmp.Or(c.HelloTimeout, DefaultHelloTimeout)
	c.DrainTimeout = cmp.Or(c.DrainTimeout, DefaultDrainTimeout)
	c.MaxTokens = cmp.Or(c.MaxTokens, DefaultMaxTokens)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultWriteTimeout)
	c.TickRate = cmp.Or(c.TickRate, DefaultTickRate)
	c.QueueSize = cmp.Or(c.QueueSize, DefaultQueueSize)
	c.PingChannel = cmp.Or(c.PingChannel, DefaultPingChannel)
	c.PingRate = cmp.Or(c.PingRate, DefaultPingRate)
	c.MaxPopulations = cmp.Or(c.MaxPopulations, DefaultMaxPopulations)
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	for _, t := range []struct {
		field string
		d     time.Duration
	}{{"IdleTimeout", c.IdleTimeout}, {"FrameTimeout", c.FrameTimeout}, {"HelloTimeout", c.HelloTimeout}, {"WriteTimeout", c.WriteTimeout}, {"DrainTimeout", c.DrainTimeout}} {
		if t.d < 0 || t.d > MaxTimeout {
			return bad(t.field, "%v is not in [0, %v]", t.d, MaxTimeout)
		}
	}
	switch {
	case c.MaxConns < 0:
		return bad("MaxConns", "%d is negative", c.MaxConns)
	case c.WriteBuffer < MinWriteBuffer:
		return bad("WriteBuffer", "%d is less than %d", c.WriteBuffer, MinWriteBuffer)
	case c.SendBuffer < 0:
		return bad("SendBuffer", "%d is negative", c.SendBuffer)
	case math.IsNaN(c.TickRate) || c.TickRate <= 0 || c.TickRate > 10000:
		return bad("TickRate", "%v Hz not in (0, 10000]", c.TickRate)
	case c.QueueSize < 0:
		return bad("QueueSize", "%d is negative", c.QueueSize)
	case math.IsNaN(c.PingRate) || c.PingRate <= 0 || math.IsInf(c.PingRate, 0):
		return bad("PingRate", "%v is not a positive rate", c.PingRate)
	case c.MaxTokens < 0 || c.MaxTokens >= 1<<56:
		return bad("MaxTokens", "%d not in [0, 2^56)", c.MaxTokens)
	case c.MaxPopulations < 0:
		return bad("MaxPopulations", "%d is negative", c.MaxPopulations)
	}
	if err := c.WebSocket.normalize(c.AllowNonLoopback); err != nil {
		return err
	}
	if err := c.UDP.normalize(c.AllowNonLoopback); err != nil {
		return err
	}
	return checkListenAddr("Addr", c.Addr, c.AllowNonLoopback)
}

// checkListenAddr refuses a host that is not a loopback IP literal or
// "localhost", unless allow is set; field names addr in the error.
func checkListenAddr(field, addr string, allow bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &ConfigError{Field: field, Msg: err.Error(), Err: err}
	}
	if allow {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() {
		return &ConfigError{Field: field, Msg: fmt.Sprintf("%q is not a loopback address (set AllowNonLoopback to listen on it)", addr), Err: ErrNonLoopback}
	}
	return nil
}
