// Package ndjson is a worked example of a game server sluice did not write,
// with a protocol of its own, and the plug-in that lets sluice drive it: a
// minimal server that speaks newline-delimited JSON and checks every
// message with a core.Gate (Server), and the proto.Protocol that frames
// sluice's clients' traffic the same way (Protocol).
//
// One JSON object a line, each way:
//
//	client: {"t":"hello","token":"42","label":"honest"}
//	        {"t":"input","ch":"move","p":"000"}
//	        {"t":"req","ch":"chat","id":7,"p":"000"}
//	        {"t":"ping","id":123}
//	server: {"t":"reply","id":7,"status":"ok"}            (id 0 answers the hello)
//	        {"t":"reply","id":7,"status":"rejected","reason":"ChannelLimit","retry_ns":500000000}
//	        {"t":"pong","id":123}
//	        {"t":"bye","reason":"Lockout"}                 (then the server closes)
//
// "p" is padding that gives a message its size. A line is at most
// MaxLine bytes. Reasons are core.Reason names.
//
// To drive it, register Protocol and run a scenario against the server's
// address: see cmd/sluice-ndjson (the sluice CLI with the protocol
// registered) and the package's test.
package ndjson

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/sluicedev/sluice/core"
)

// MaxLine is the longest line either side sends, newline included.
const MaxLine = 4096

// Server is the example game server. It is safe for concurrent use; Close
// stops it and waits for every connection's goroutine.
type Server struct {
	gate     *core.Gate
	channels map[string]uint16 // policy channel name -> index
	requests map[string]bool   // channels of request class
	start    time.Time
	ln       net.Listener
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
}

// NewServer returns a server that checks every message with a gate on p,
// listening on addr (a loopback address and port, such as 127.0.0.1:0).
func NewServer(p core.Policy, addr string) (*Server, error) {
	s := &Server{channels: map[string]uint16{}, requests: map[string]bool{}, start: time.Now(), done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	g, err := core.NewGate(p, 0)
	if err != nil {
		return nil, err
	}
	s.gate = g
	for i, c := range p.Channels {
		s.channels[c.Name] = uint16(i)
		s.requests[c.Name] = c.Class == core.ClassRequest
	}
	if s.ln, err = net.Listen("tcp", addr); err != nil {
		return nil, err
	}
	s.wg.Add(2)
	go s.accept()
	go s.tick()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() netip.AddrPort {
	return s.ln.Addr().(*net.TCPAddr).AddrPort()
}

// Close stops the server.
func (s *Server) Close() error {
	close(s.done)
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) now() int64 { return int64(time.Since(s.start)) }

// tick steps the gate (strike decay, coalesced events, sweeps) 30 times a
// second.
func (s *Server) tick() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second / 30)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.gate.Step(s.now())
		}
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// clientMsg is a line a client sends.
type clientMsg struct {
	T     string `json:"t"`
	Token string `json:"token"`
	Label string `json:"label"`
	Ch    string `json:"ch"`
	ID    uint64 `json:"id"`
	P     string `json:"p"`
}

// serverMsg is a line the server sends.
type serverMsg struct {
	T       string `json:"t"`
	ID      uint64 `json:"id"`
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	RetryNs int64  `json:"retry_ns,omitempty"`
}

// serve runs one connection: the gate opens a session for its source
// address, the first line must be a hello, and every line after it is
// checked before it is handled.
func (s *Server) serve(c net.Conn) {
	src := c.RemoteAddr().(*net.TCPAddr).AddrPort()
	w := bufio.NewWriter(c)
	send := func(m serverMsg) bool {
		b, _ := json.Marshal(m)
		_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		_, err := w.Write(append(b, '\n'))
		return err == nil && w.Flush() == nil
	}
	bye := func(r core.Reason) { send(serverMsg{T: "bye", Reason: r.String()}) }
	h, v := s.gate.Open(src, s.now())
	if !v.OK() {
		bye(v.Reason)
		return
	}
	defer s.gate.Close(h, s.now())
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 512), MaxLine)
	hello := false
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if !sc.Scan() {
			if errors.Is(sc.Err(), bufio.ErrTooLong) {
				bye(core.Oversize)
			}
			return
		}
		line := sc.Bytes()
		size := uint32(len(line) + 1)
		var m clientMsg
		if err := json.Unmarshal(line, &m); err != nil {
			if v := s.gate.Check(core.Message{Session: h, Size: size, Flags: core.FlagMalformed}, s.now()); v.Action == core.Disconnect {
				bye(v.Reason)
				return
			}
			continue
		}
		if !hello {
			account, err := strconv.ParseUint(m.Token, 10, 64)
			if m.T != "hello" || err != nil {
				bye(core.Malformed)
				return
			}
			if v := s.gate.Authenticate(h, account, s.now()); !v.OK() {
				bye(v.Reason)
				return
			}
			hello = true
			if !send(serverMsg{T: "reply", Status: "ok"}) {
				return
			}
			continue
		}
		switch m.T {
		case "ping":
			if !send(serverMsg{T: "pong", ID: m.ID}) {
				return
			}
			continue
		case "input", "req":
		default:
			m.Ch = "" // checked as malformed below
		}
		kind, ok := s.channels[m.Ch]
		msg := core.Message{Session: h, Size: size, Kind: kind}
		if !ok || (m.T == "req") != s.requests[m.Ch] || m.T == "req" && m.ID == 0 {
			msg.Flags = core.FlagMalformed
		}
		if m.T == "req" {
			msg.Request = m.ID
		}
		v := s.gate.Check(msg, s.now())
		switch {
		case v.Action == core.Disconnect:
			bye(v.Reason)
			return
		case m.T != "req" || msg.Flags != 0:
		case v.OK():
			// The handler would run here; a request is done once
			// answered.
			s.gate.Done(h, m.ID)
			if !send(serverMsg{T: "reply", ID: m.ID, Status: "ok"}) {
				return
			}
		case v.Action == core.Reject:
			if !send(serverMsg{T: "reply", ID: m.ID, Status: "rejected", Reason: v.Reason.String(), RetryNs: int64(v.RetryAfter)}) {
				return
			}
		}
	}
}
