package server

import (
	"context"
	"time"
)

// Serve starts s, calls ready (if not nil) once it listens, and blocks
// until ctx is done; then it shuts s down gracefully, allowing the longest
// a write may take (one and a half WriteTimeouts) plus a second. It is Run
// for a caller that builds the server itself, to attach observers or
// collectors to its gate before the first connection.
func (s *Server) Serve(ctx context.Context, ready func(*Server)) error {
	if err := s.Start(); err != nil {
		return err
	}
	if ready != nil {
		ready(s)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout+s.cfg.WriteTimeout/2+time.Second)
	defer cancel()
	return s.Shutdown(sctx)
}
