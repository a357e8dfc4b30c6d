package reports

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// A write that is cut short (the process killed, a second Ctrl-C) can
// leave the temporary files and directories RenderFiles writes through:
// ".results.json.tmp-123", ".report.html.tmp-123", ".hdr.tmp-123" (the
// histogram directory being filled) and, under hdr, ".x.hgrm.tmp-123".
// Never a file at one of the real names: each is renamed into place
// whole. They are sluice's own, so the next RenderFiles into the same
// directory removes them, and CheckDir does not count them as files
// sluice did not write.

// tmpInfix is what os.CreateTemp and os.MkdirTemp put between the name a
// temporary file stands for and their random digits (writeFileAtomic's
// pattern "." + base + ".tmp-*").
const tmpInfix = ".tmp-"

// leftoverOf returns the name a temporary file or directory named name
// stood for ("report.html" for ".report.html.tmp-123"), and whether name
// is one of RenderFiles' (or the CLI's write check's).
func leftoverOf(name string) (string, bool) {
	if strings.HasPrefix(name, ".sluice-write-check-") {
		return name, true
	}
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, tmpInfix)
	if i <= 0 {
		return "", false
	}
	for _, c := range rest[i+len(tmpInfix):] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	return rest[:i], len(rest) > i+len(tmpInfix)
}

// isLeftover reports whether name, in a results directory (top) or under
// its histogram directory, is a temporary file RenderFiles writes through.
func isLeftover(name string, top bool) bool {
	base, ok := leftoverOf(name)
	if !ok {
		return false
	}
	if ext := filepath.Ext(base); ext == ".hgrm" || ext == ".hlog" {
		return !top
	}
	return top && (base == ResultsFile || base == ReportFile || base == HDRDir || strings.HasPrefix(base, ".sluice-write-check-"))
}

// RemoveLeftovers removes, from the results directory dir, the temporary
// files and directories that a write cut short left behind (see above),
// and nothing else. A dir that does not exist has none.
func RemoveLeftovers(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !isLeftover(e.Name(), true) {
			continue
		}
		if base, _ := leftoverOf(e.Name()); base == HDRDir && e.IsDir() {
			// A histogram directory being filled: only if it holds
			// nothing but histograms and their temporary files.
			if err := checkHistogramDir(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
			continue
		}
		if e.Type().IsRegular() {
			errs = append(errs, os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// writes serialises each step of a write (a file made and renamed into
// place, a directory made or moved) with StopWrites, so that once it has
// stopped them no step is under way nor can begin: what it then removes
// stays removed.
var writes struct {
	mu      sync.Mutex
	stopped bool
}

// errWritesStopped is returned by a write step after StopWrites.
var errWritesStopped = errors.New("reports: writes were stopped (interrupted)")

// step runs one step of a write, unless StopWrites has stopped them.
func step(f func() error) error {
	writes.mu.Lock()
	defer writes.mu.Unlock()
	if writes.stopped {
		return errWritesStopped
	}
	return f()
}

// StopWrites stops every write of this process for good, waiting for the
// step under way (one file), and then removes the temporary files and
// directories in dir that a write cut short leaves (RemoveLeftovers): a
// program that quits at once (a second Ctrl-C) calls it so that nothing
// half-written is left behind.
func StopWrites(dir string) error {
	writes.mu.Lock()
	writes.stopped = true
	writes.mu.Unlock()
	return RemoveLeftovers(dir)
}
