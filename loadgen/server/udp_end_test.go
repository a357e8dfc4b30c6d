package server

import (
	"testing"
	"time"
)

// A session its client leaves is forgotten as soon as its writer has
// sent what it had, as a TCP connection is once it closes, not at the
// next sweep of the table (a second after the server started here): its
// place in MaxConns is free for the next client at once.
func TestUDPLeftSessionIsForgottenAtOnce(t *testing.T) {
	cfg := udpConfig()
	cfg.MaxConns = 1
	cfg.IdleTimeout = 8 * time.Second // a sweep every second
	s := startServer(t, cfg)
	a := udpDial(t, s.UDPAddr())
	a.mustHello(t, "1", "first")
	if err := a.leave(); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	for s.UDPStats().Sessions != 0 {
		if time.Since(left) > 500*time.Millisecond {
			t.Fatalf("the session left is still in the table after %v", time.Since(left))
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("forgotten %v after the Disconnect was sent", time.Since(left))
	b := udpDial(t, s.UDPAddr())
	b.mustHello(t, "2", "second")
	if u := s.UDPStats(); u.Refused != 0 || u.Opened != 2 {
		t.Errorf("udp stats %+v, want 2 opened and none refused", u)
	}
}
