// Package core is the limiter API that servers embed to check every inbound
// message: keyed limits over package shardmap, decisions with a reason and a
// retry-after, escalation from soft throttling to lockout, and the layered
// gate (frame size, session, transport bytes and frames, account, command
// kind, match) with strikes, events, stats and audit.
//
// # Use
//
// A game server loads a policy, makes one Gate, and asks it about every
// inbound message before its own validation (passing a limit is never
// permission):
//
//	pol, err := core.LoadPolicy("policy.yaml") // errors name the field, line and column
//	if err != nil {
//		return err
//	}
//	g, err := core.NewGate(pol, now)
//	...
//	s, v := g.Open(remoteAddrPort, now)    // a connection: pre-auth, keyed by address
//	v = g.Authenticate(s, accountID, now)  // account state outlives connections
//	v = g.Check(core.Message{Session: s, Kind: chat, Size: n, Request: id}, now)
//	switch v.Action {
//	case core.Accept:     // handle it; g.Done(s, id) when a request finishes
//	case core.Drop:       // replaceable input: discard silently
//	case core.Reject:     // a request: answer with v.Reason and v.RetryAfter
//	case core.Disconnect: // strikes reached the disconnect rung: close
//	}
//	g.Close(s, now) // the connection ended
//
// A server that needs one keyed limit rather than a policy uses a Limiter
// (NewLimiter, then TakeAt per key). The examples (Example, ExampleGate,
// ExampleLimiter, ExampleAudit) run as tests; docs/embedding.md and
// docs/policy.md in the repository walk through both.
//
// core does no I/O, except that LoadPolicy, a convenience for servers and
// tools, reads the one policy file it is given; it starts no goroutine the
// caller cannot stop, and knows nothing about sockets. Time is always a parameter (nanoseconds on the
// server's clock; see atomicbucket.Nanotime), never taken from a client.
package core
