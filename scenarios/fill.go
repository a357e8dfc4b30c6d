package scenarios

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/sluicedev/sluice/loadgen"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/record"
	"github.com/sluicedev/sluice/reports"
)

// fill copies one variant's run into its report: per population and kind
// the sent, accepted and dropped counts (the server's decisions, and what
// only the client saw), the latency histograms, the time series, and the
// population's disconnects, lockouts and cut-off times.
func fill(v *reports.Variant, s *Scenario, r *loadgen.Result) error {
	rec := r.Recorder
	dense := record.NewSeriesHistogram() // each interval's response times in turn
	v.SetServerCPU(r.ServerCPU, r.Frames)
	v.Server = serverView(r.Server)
	v.Servers = gameServers(r)
	for pi, label := range r.Labels {
		sp := s.Population[pi]
		role := reports.Honest
		if *sp.Hostile {
			role = reports.Hostile
		}
		behaviour := sp.Behaviour
		if sp.roleFromTrace {
			behaviour += " (role from the trace's labels)"
		}
		if sp.roleFromLabel != "" {
			behaviour += " (sessions labelled " + sp.roleFromLabel + ")"
		}
		p := v.AddPopulation(label, behaviour, role, r.Clients[pi])
		if s.MixedTransports() {
			p.Transport = s.transportOf(pi)
		}
		for k := behave.Kind(0); k < behave.NumKinds; k++ {
			server := rec.KindDecisions(pi, k)
			client := rec.Outcomes(pi, k)
			var total int64
			for _, n := range server {
				total += n
			}
			for _, n := range client {
				total += n
			}
			if total == 0 && rec.Bytes(pi, k) == 0 {
				continue
			}
			ks := p.Kind(k.String())
			if k == behave.KindSession {
				fillSessions(ks, client)
				continue
			}
			if !r.ServerView {
				server, client = clientView(client)
				ks.Unknown = client[record.Sent]
			}
			fillKind(ks, server, client, k == behave.KindRaw)
			ks.SentBytes = rec.Bytes(pi, k)
			// The drivers count bytes written per kind but decide frames,
			// not bytes, so accepted bytes are estimated as the accepted
			// share of the frames the kind wrote (not of Sent, which also
			// counts frames never written and so adds no bytes): exact when
			// a kind's frames are all one size (every flood), close
			// otherwise.
			if w := rec.Written(pi, k); w > 0 {
				ks.AcceptedBytes = ks.SentBytes * min(ks.Accepted, w) / w
			}
			for _, m := range []struct {
				from record.Metric
				to   reports.Metric
			}{{record.Response, reports.ResponseTime}, {record.Service, reports.ServiceTime}, {record.SendLag, reports.SendLag}} {
				if h := rec.Histogram(pi, k, m.from); h != nil && h.TotalCount() > 0 {
					if err := ks.AddHistogram(m.to, h); err != nil {
						return err
					}
				}
			}
		}
		for _, iv := range r.Series[pi] {
			// The interval's response times, dense for their percentiles
			// and encoding: one histogram reused for every interval
			// (AddInterval keeps none).
			var rt *hdrhistogram.Histogram
			lost := iv.ResponseInto(dense)
			if dense.TotalCount() > 0 {
				rt = dense
			}
			if lost != 0 {
				return fmt.Errorf("scenarios: population %q: interval at %v: %d response times outside the series' histogram", label, iv.Start, lost)
			}
			drops := map[string]int64{}
			for o, n := range iv.Outcomes {
				out := record.Outcome(o)
				// Drops as fillKind counts them: the server's refusals
				// and the client-only drops, not a client outcome that
				// restates a server decision or says the message was
				// written or still held.
				if n == 0 || out == record.Accepted || !out.IsServerReason() && !out.IsClientDrop() {
					continue
				}
				drops[out.String()] += n
			}
			// The last point ends with the run: at its Duration, or
			// where a stopped run stopped (its series ends there).
			end := s.Duration
			if !r.Complete {
				end = min(end, max(r.Ran, iv.Start+1))
			}
			length := min(s.Interval, end-iv.Start)
			if err := p.AddInterval(iv.Start, length, iv.Sent, iv.Accepted, drops, rt); err != nil {
				return err
			}
		}
		if role == reports.Honest {
			p.Summary.FalseDisconnects = r.Disconnected[pi]
			p.Summary.FalseLockouts = r.LockedOut[pi]
		} else {
			// Over the clients that took part: one that never dialled
			// was never there to be cut off.
			p.Summary.CutOff = reports.CutOffTimes(r.CutOffs[pi], r.Active[pi])
		}
	}
	return nil
}

// fillSessions sets the session row: each session the server ended, by
// the reason it gave (its own, or Disconnected), as the worker saw it.
func fillSessions(ks *reports.KindStats, client [record.NumOutcomes]int64) {
	for o, n := range client {
		if n > 0 {
			ks.Sent += n
			ks.Drop(record.Outcome(o).String(), n)
		}
	}
}

// fillKind sets a kind's counts. The server's decisions say what became of
// every frame it saw; the client adds what went wrong on its side: never
// sent and refused connections (frames the server never saw), and
// timeouts, disconnects while a reply was awaited and pending-table
// overflows (frames the server usually did see and decide). A frame of the
// second kind is counted twice, under the server's decision and the
// client's outcome: a request the server accepted but answered late is one
// accepted and one Timeout. The never sent are NotSent, neither sent nor
// dropped. Sent + NotSent is at least the sum of all counts, but
// for raw bytes (raw): their sends are writes and the server decides
// frames, of which there may be more, so Sent is the writes, every one the
// client recorded an outcome for (see reports.RawKind).
func fillKind(ks *reports.KindStats, server, client [record.NumOutcomes]int64, raw bool) {
	ks.Accepted = server[record.Accepted]
	decided := ks.Accepted
	for o, n := range server {
		if out := record.Outcome(o); n > 0 && out != record.Accepted && out.IsServerReason() {
			ks.Drop(out.String(), n)
			decided += n
		}
	}
	var written int64
	for o, n := range client {
		out := record.Outcome(o)
		if n == 0 {
			continue
		}
		written += n
		if out.IsClientDrop() {
			ks.Drop(out.String(), n)
			decided += n
		}
	}
	// The NotSent outcomes, counted in written and decided above, are
	// messages never written: they go to NotSent (Drop puts them there),
	// not to Sent.
	ks.Sent = max(written, decided) - ks.NotSent
	if raw {
		ks.Sent = written - ks.NotSent
	}
}

// clientView splits the outcomes a client recorded in a run that did not
// read the server's counters: the replies' decisions (accepted, and the
// server's reasons for a rejection), which stand in for the server's own
// counts, and the rest, as fillKind takes them. A request's decision is
// then counted once, where the server's view would count it under both.
func clientView(client [record.NumOutcomes]int64) (server, rest [record.NumOutcomes]int64) {
	for o, n := range client {
		if record.Outcome(o).IsServerReason() {
			server[o] = n
		} else {
			rest[o] = n
		}
	}
	return server, rest
}
