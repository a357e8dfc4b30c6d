package reports

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// HGRMValueScale is the divisor applied to nanosecond values in .hgrm files:
// their Value column is in milliseconds.
const HGRMValueScale = 1e6

// WriteHGRM writes h's percentile distribution in HdrHistogram's text format
// (the .hgrm read by HdrHistogram's plotters), values in milliseconds, five
// ticks per half distance.
func WriteHGRM(w io.Writer, h *Histogram) error {
	d, err := h.Decode()
	if err != nil {
		return err
	}
	if _, err := d.PercentilesPrint(w, 5, HGRMValueScale); err != nil {
		return fmt.Errorf("reports: write hgrm: %w", err)
	}
	return nil
}

// WriteHlog writes p's interval response-time histograms as an HdrHistogram
// interval log (.hlog): timestamps in seconds from the start of the
// variant's run, interval maxima in milliseconds. Intervals without a
// histogram are skipped. It returns an error when p has none at all.
func WriteHlog(w io.Writer, v *Variant, p *Population) error {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return fmt.Errorf("reports: write hlog: %w", err)
	}
	// The names go into a comment line, which a log reader also scans for
	// "#[StartTime: " and "#[BaseTime: ": quoted, with '#' and '[' then
	// escaped in the quotes (still a valid Go string of the same name), a
	// name cannot set the log's time base.
	safe := strings.NewReplacer("#", `\x23`, "[", `\x5b`)
	quote := func(name string) string { return safe.Replace(strconv.Quote(name)) }
	if err := lw.OutputComment(fmt.Sprintf("[sluice response time: variant %s, population %s; values in ns, timestamps in s from the variant's start]", quote(v.Name), quote(p.Name))); err != nil {
		return fmt.Errorf("reports: write hlog: %w", err)
	}
	if err := lw.OutputLegend(); err != nil {
		return fmt.Errorf("reports: write hlog: %w", err)
	}
	n := 0
	for _, iv := range p.Series {
		if iv.HDR == "" {
			continue
		}
		h, err := hdrhistogram.Decode([]byte(iv.HDR))
		if err != nil {
			return fmt.Errorf("reports: variant %q population %q: interval at %v: %w", v.Name, p.Name, iv.Start, err)
		}
		h.SetStartTimeMs(iv.Start.Milliseconds())
		h.SetEndTimeMs((iv.Start + iv.Length).Milliseconds())
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return fmt.Errorf("reports: write hlog: %w", err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("reports: variant %q population %q has no interval histograms", v.Name, p.Name)
	}
	return nil
}

// Files written by RenderFiles, relative to its directory.
const (
	ResultsFile = "results.json"
	ReportFile  = "report.html"
	HDRDir      = "hdr"
)

// RenderFiles writes everything a reader wants from r into dir (created if
// needed), each file atomically:
//
//	results.json                                 the results (WriteFile)
//	report.html                                  the report (WriteHTML)
//	hdr/VARIANT/POPULATION.KIND.response_time.hgrm   per kind (WriteHGRM)
//	hdr/VARIANT/POPULATION.response_time.hlog    per population (WriteHlog)
//
// Names are the variant, population and kind names with characters other
// than letters, digits, '-', '_' and '.' replaced by '_'. Populations and
// kinds without the histograms are skipped. What CheckDir refuses is
// refused before anything is written.
func RenderFiles(dir string, r *Results) error {
	if err := r.Validate(); err != nil {
		return err
	}
	// What CheckDir refuses is refused before anything is written or
	// removed.
	if err := CheckDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	// What an earlier write cut short left goes first.
	if err := RemoveLeftovers(dir); err != nil {
		return err
	}
	// r is validated once above; validating decodes every kind's histogram, so
	// the files below are written without validating again.
	if err := writeResultsFile(filepath.Join(dir, ResultsFile), r); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, ReportFile), func(w io.Writer) error { return writeHTML(w, r) }); err != nil {
		return err
	}
	// The histograms are written into a directory of their own and put in
	// place whole, replacing the earlier run's: an earlier run's files (a
	// variant this run did not run) would sit beside this run's as if they
	// were, and a write cut short must not leave half of them.
	var stage string
	if err := step(func() (err error) { stage, err = os.MkdirTemp(dir, "."+HDRDir+tmpInfix+"*"); return err }); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	var errs []error
	if err := writeHistograms(stage, r); err != nil {
		errs = append(errs, err)
	}
	if err := removeHistogramFiles(filepath.Join(dir, HDRDir)); err != nil {
		os.RemoveAll(stage)
		return err
	}
	if entries, _ := os.ReadDir(stage); len(entries) == 0 {
		os.Remove(stage) // no histograms: no histogram directory, as before
		return errors.Join(errs...)
	}
	// MkdirTemp makes the directory for its owner alone; hdr is as
	// readable as the files beside it.
	if err := os.Chmod(stage, 0o755); err != nil {
		errs = append(errs, err)
	}
	if err := step(func() error { return os.Rename(stage, filepath.Join(dir, HDRDir)) }); err != nil {
		os.RemoveAll(stage)
		return fmt.Errorf("reports: %w", err)
	}
	return errors.Join(errs...)
}

// writeHistograms writes r's .hgrm and .hlog files under hdr, one
// directory per variant.
func writeHistograms(hdr string, r *Results) error {
	var errs []error
	vnames := newNamer()
	for _, v := range r.Variants {
		vdir := filepath.Join(hdr, vnames.name(v.Name))
		made := false
		pnames := newNamer()
		// Population and kind names can join into the same file name
		// ("a" + "b.c", "a.b" + "c"): fnames keeps the names in this
		// directory unique.
		fnames := newNamer()
		for _, p := range v.Populations {
			pname := pnames.name(p.Name)
			knames := newNamer()
			var files []func() error
			for _, k := range p.Kinds {
				if k.ResponseTime == nil || k.ResponseTime.Count == 0 {
					continue
				}
				path := filepath.Join(vdir, fnames.name(pname+"."+knames.name(k.Kind))+".response_time.hgrm")
				files = append(files, func() error {
					return writeFileAtomic(path, func(w io.Writer) error { return WriteHGRM(w, k.ResponseTime) })
				})
			}
			if hasIntervalHistograms(p) {
				path := filepath.Join(vdir, fnames.name(pname)+".response_time.hlog")
				files = append(files, func() error {
					return writeFileAtomic(path, func(w io.Writer) error { return WriteHlog(w, v, p) })
				})
			}
			if len(files) > 0 && !made {
				if err := step(func() error { return os.MkdirAll(vdir, 0o755) }); err != nil {
					return fmt.Errorf("reports: %w", err)
				}
				made = true
			}
			for _, f := range files {
				if err := f(); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

func hasIntervalHistograms(p *Population) bool {
	for _, iv := range p.Series {
		if iv.HDR != "" {
			return true
		}
	}
	return false
}

// namer turns names into distinct file-name-safe strings.
type namer map[string]bool

func newNamer() namer { return namer{} }

func (n namer) name(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		case c == '.' && b.Len() > 0:
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" {
		base = "_"
	}
	out := base
	for i := 2; n[strings.ToLower(out)]; i++ {
		out = fmt.Sprintf("%s-%d", base, i)
	}
	n[strings.ToLower(out)] = true
	return out
}

// CheckDir reports, without writing anything, what would make RenderFiles
// refuse dir: dir is not a directory, results.json or report.html is a
// directory, or the histogram directory is not one RenderFiles would
// replace (see removeHistogramFiles). A dir that does not exist yet is
// fine: RenderFiles makes it. A caller can check before a long run that
// its results can be written.
func CheckDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("reports: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("reports: %s is not a directory: remove it, or write to another directory", dir)
	}
	for _, name := range []string{ResultsFile, ReportFile} {
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return fmt.Errorf("reports: %s is a directory, where sluice writes a file: remove it, or write to another directory", path)
		}
	}
	return checkHistogramDir(filepath.Join(dir, HDRDir))
}

// checkHistogramDir reports why dir, an earlier run's histogram directory,
// is not one that RenderFiles may remove and write again: it is not a
// directory, or it holds something other than .hgrm and .hlog files (in
// directories). A dir that does not exist is fine.
func checkHistogramDir(dir string) error {
	foreign := ""
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if isLeftover(d.Name(), false) && d.Type().IsRegular() {
			return nil // a write cut short: sluice's own, removed with the rest
		}
		if ext := filepath.Ext(path); ext != ".hgrm" && ext != ".hlog" || !d.Type().IsRegular() {
			foreign = path
			return filepath.SkipAll
		}
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("reports: %w", err)
	case foreign == dir:
		return fmt.Errorf("reports: %s is not a directory, and sluice writes its histograms there: remove it, or write to another directory", dir)
	case foreign != "":
		return fmt.Errorf("reports: %s was not written by sluice, and sluice replaces its %s directory on each write: move the file out, or write to another directory", foreign, HDRDir)
	}
	return nil
}

// removeHistogramFiles removes dir, an earlier run's histogram directory,
// if it holds nothing but .hgrm and .hlog files (in directories); a
// directory holding anything else is left as it is, with an error, rather
// than deleting what sluice did not write.
func removeHistogramFiles(dir string) error {
	if err := checkHistogramDir(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}
