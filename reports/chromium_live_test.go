package reports

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The report as a reader meets it, in headless Chromium at a desktop and a
// narrow (phone) width, with scripts on and off: the verdict, the
// per-population headlines, the definitions of every count and the
// comparison are there; with scripts every chart that carries live data
// becomes an interactive uPlot chart (with its legend of toggles and
// readouts) no wider than the window; with scripts off the SVG charts
// stay. The page is the version 5 file of flood-mix (real data: hostile
// populations with no replies) rendered together with the synthetic
// three-variant results, so both kinds of page are seen. Set
// SLUICE_REPORT_SHOT_DIR to keep the pages and screenshots.
func TestChromiumInteractiveReport(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("no chromium binary (/usr/bin/chromium); install Debian's chromium package to run this test")
	}
	dir := t.TempDir()
	if keep := os.Getenv("SLUICE_REPORT_SHOT_DIR"); keep != "" {
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile("testdata/results-v5.json")
	if err != nil {
		t.Fatal(err)
	}
	real, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Results{"synthetic": synthWith(t, 7, 120, 3), "flood-mix": real} {
		t.Run(name, func(t *testing.T) {
			html := renderHTML(t, r)
			page := filepath.Join(dir, name+".html")
			if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
				t.Fatal(err)
			}
			live := strings.Count(html, `class="live-data"`)
			if live == 0 {
				t.Fatal("no chart carries live data")
			}
			for _, want := range []string{`id="verdict"`, `<p class="verdict">`, `id="outcomes"`, "<dt>not sent</dt>", "<dt>loss</dt>", `<table class="pops">`, `id="comparison"`} {
				if !strings.Contains(html, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			for _, width := range []int{1280, 390} {
				size := strconv.Itoa(width) + ",2400"
				// Scripts on: the charts are uPlot's.
				dom := string(runChromium(t, bin, dir, page, "--dump-dom", "--virtual-time-budget=10000", "--window-size="+size))
				if !strings.Contains(dom, `class="charts-live`) {
					t.Fatalf("width %d: the page's script did not run", width)
				}
				if n := strings.Count(dom, `class="uplot`); n != live {
					t.Errorf("width %d: %d interactive charts, want %d (one per chart with live data)", width, n, live)
				}
				if n := strings.Count(dom, `class="u-legend`); n != live {
					t.Errorf("width %d: %d chart legends with toggles and readouts, want %d", width, n, live)
				}
				for _, m := range uplotWidth.FindAllStringSubmatch(dom, -1) {
					if w, _ := strconv.Atoi(m[1]); w > width {
						t.Errorf("width %d: a chart is %d px wide", width, w)
					}
				}
				shot := filepath.Join(dir, name+"-"+strconv.Itoa(width)+".png")
				runChromium(t, bin, dir, page, "--screenshot="+shot, "--virtual-time-budget=10000", "--window-size="+size)
				img := decodePNG(t, shot)
				nonWhite, distinct, _ := screenshotStats(img)
				b := img.Bounds()
				if b.Dx() != width || float64(nonWhite)/float64(b.Dx()*b.Dy()) < 0.03 || distinct < 64 {
					t.Errorf("width %d: screenshot %dx%d, %d non-white pixels, %d colours: blank or mis-sized", width, b.Dx(), b.Dy(), nonWhite, distinct)
				}
			}
			// Scripts off: the static SVG charts show. Headless Chromium
			// needs scripts to dump or capture a page, so the page is
			// shown as a browser without scripts runs it: its script
			// elements never execute (here, they are taken out).
			noscript := filepath.Join(dir, name+"-noscript.html")
			if err := os.WriteFile(noscript, []byte(pageScript.ReplaceAllString(html, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			ndom := string(runChromium(t, bin, dir, noscript, "--dump-dom", "--window-size=1280,2400"))
			if strings.Contains(ndom, `class="uplot`) {
				t.Error("charts went live without the script")
			}
			if paths, _ := chartDataPaths(ndom); len(paths) < live {
				t.Errorf("scripts off: %d SVG charts, want at least %d", len(paths), live)
			}
			shot := filepath.Join(dir, name+"-noscript.png")
			runChromium(t, bin, dir, noscript, "--screenshot="+shot, "--window-size=1280,6000")
			nonWhite, _, found := screenshotStats(decodePNG(t, shot))
			data := 0
			for _, n := range found {
				data += n
			}
			if nonWhite < 100000 || data < 2000 {
				t.Errorf("scripts off: %d non-white and %d data-coloured pixels: the static charts do not show", nonWhite, data)
			}
		})
	}
}

var (
	uplotWidth = regexp.MustCompile(`class="uplot[^"]*" style="width: ([0-9]+)px`)
	pageScript = regexp.MustCompile(`(?s)<script>.*?</script>`)
)

// A report of an interrupted run names the variants it never got to, in
// the banner and in the verdict.
func TestReportNamesVariantsThatNeverRan(t *testing.T) {
	r := synthCopy(t, 1)
	r.Run.Complete = false
	r.Run.PlannedVariants = []string{"baseline", "strict", "lenient", "paranoid"}
	r.Variants = r.Variants[:2]
	if got := r.NotRun(); strings.Join(got, ",") != "lenient,paranoid" {
		t.Fatalf("NotRun %q", got)
	}
	html := renderHTML(t, r)
	for _, want := range []string{"Never ran: lenient, paranoid.", "Never ran (the run was interrupted): lenient, paranoid."} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	out, err := Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(back.NotRun(), ",") != "lenient,paranoid" {
		t.Error("the plan did not survive the file")
	}
	// A variant outside the plan is refused.
	r.Run.PlannedVariants = []string{"baseline"}
	if err := r.Validate(); err == nil {
		t.Error("a variant outside run.planned_variants passed")
	}
}
