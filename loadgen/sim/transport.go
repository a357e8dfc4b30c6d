package sim

// transportOf is the transport c's client speaks: its population's
// (SimConfig.Transports), else the run's.
func (s *Sim) transportOf(c *simConn) string {
	if c.pop >= 0 && c.pop < len(s.cfg.Transports) && s.cfg.Transports[c.pop] != "" {
		return s.cfg.Transports[c.pop]
	}
	return s.cfg.Transport
}
