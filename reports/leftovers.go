package reports

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
