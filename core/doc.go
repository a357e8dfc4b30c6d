// Package core is the limiter API that servers embed to check every inbound
// message: keyed limits over package shardmap, decisions with a reason and a
// retry-after, escalation from soft throttling to lockout, and the layered
// gate (frame size, session, transport bytes and frames, account, command
// kind, match) with strikes, events, stats and audit.
//
// core does no I/O, except that LoadPolicy, a convenience for servers and
// tools, reads the one policy file it is given; it starts no goroutine the
// caller cannot stop, and knows nothing about sockets. Time is always a parameter (nanoseconds on the
// server's clock; see atomicbucket.Nanotime), never taken from a client.
package core
