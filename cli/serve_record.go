package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicedev/sluice/atomicbucket"
	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/trace"
)

// serveRecording is sluice serve's trace: the gate's record buffer, and
// the recorder draining it into the file.
type serveRecording struct {
	buf  *core.RecordBuffer
	rec  *trace.Recorder
	file *os.File
	path string
}

// startRecording creates the trace file and starts draining into it. The
// server's gate reads the monotonic clock: trace time 0 is now.
func startRecording(path, keyFile string, p core.Policy) (*serveRecording, error) {
	var h *trace.Hasher
	if keyFile != "" {
		key, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, usageError{fmt.Errorf("--record-hash-key: %w", err)}
		}
		if h, err = trace.NewHasher(key); err != nil {
			return nil, usageError{fmt.Errorf("--record-hash-key %s: %w", keyFile, err)}
		}
	}
	buf, err := core.NewRecordBuffer(1 << 16)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	origin, wall := atomicbucket.Nanotime(), time.Now().UTC()
	w, err := trace.NewWriter(f, trace.Header{Recorder: "sluice serve " + sluiceVersion(), Origin: wall, PolicyDigest: trace.PolicyDigest(p), Hashed: h != nil})
	if err != nil {
		f.Close()
		return nil, err
	}
	n, err := core.NewGate(p, 0) // the policy as the server's gate normalizes it, for the kinds' names
	if err != nil {
		f.Close()
		return nil, err
	}
	rec := trace.NewRecorder(buf, w, n.Policy(), h)
	rec.SetOrigin(origin)
	rec.Start(50 * time.Millisecond)
	return &serveRecording{buf: buf, rec: rec, file: f, path: path}, nil
}

// stop drains what is left, closes the trace, and says what it holds.
func (r *serveRecording) stop(out io.Writer) error {
	err := r.rec.Close()
	if cerr := r.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--record %s: %w", r.path, err)
	}
	fmt.Fprintf(out, "sluice: recorded %s (%d records lost: the writer fell behind)\n", r.path, r.rec.Lost())
	return nil
}
