package reports

import (
	"bytes"
	"context"
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromiumPath finds a Chromium binary: /usr/bin/chromium (Debian's
// package) or one named chromium on PATH.
func chromiumPath() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// runChromium runs headless Chromium on a file with the given extra
// arguments and returns its standard output. The deadline only keeps a hung
// browser from hanging the test; it asserts nothing about speed.
func runChromium(t *testing.T, bin, dir, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	profile, err := os.MkdirTemp(dir, "profile-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--disable-extensions", "--disable-background-networking",
		"--user-data-dir=" + profile,
	}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, tail(errb.String(), 2000))
	}
	return out.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestChromiumRendersReport renders the synthetic report in headless
// Chromium: the DOM Chromium builds must hold every chart as SVG with data
// paths, and the screenshot must not be blank and must show the charts'
// data colours. Skipped only when no Chromium binary is installed
// (apt-get install chromium). Set SLUICE_REPORT_SHOT_DIR to keep the page
// and the screenshot for a look.
func TestChromiumRendersReport(t *testing.T) {
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
	r := synthCopy(t, 1)
	page := filepath.Join(dir, "report.html")
	html := renderHTML(t, r)
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	wantPaths, _ := chartDataPaths(html)

	// The DOM as Chromium parsed it: every chart is an SVG element with its
	// data paths.
	dom := string(runChromium(t, bin, dir, page, "--dump-dom"))
	if !strings.Contains(dom, `id="environment"`) {
		t.Fatalf("dumped DOM lacks the page (%d bytes)", len(dom))
	}
	gotPaths, gotSegs := chartDataPaths(dom)
	if len(gotPaths) != len(wantPaths) || len(gotPaths) == 0 {
		t.Fatalf("Chromium's DOM holds %d charts, the page %d", len(gotPaths), len(wantPaths))
	}
	for i := range gotPaths {
		if gotPaths[i] == 0 || gotSegs[i] == 0 {
			t.Errorf("chart %d has no data path in Chromium's DOM", i)
		}
	}

	// The screenshot: tall enough for the whole page.
	shot := filepath.Join(dir, "report.png")
	runChromium(t, bin, dir, page, "--screenshot="+shot, "--window-size=1280,12000")
	img := decodePNG(t, shot)
	nonWhite, distinct, found := screenshotStats(img)
	b := img.Bounds()
	if share := float64(nonWhite) / float64(b.Dx()*b.Dy()); share < 0.03 {
		t.Errorf("screenshot is nearly blank: %.2f%% non-white pixels", 100*share)
	}
	t.Logf("screenshot %dx%d: %.1f%% non-white, %d colours; data colour pixels %v", b.Dx(), b.Dy(), 100*float64(nonWhite)/float64(b.Dx()*b.Dy()), distinct, found)
	if distinct < 64 {
		t.Errorf("screenshot has only %d distinct colours", distinct)
	}
	// Every population's and variant's colour shows up on screen.
	for _, c := range append(append([]string{acceptedColor}, populationColors[:4]...), variantColors[:2]...) {
		if found[strings.ToUpper(c)] < 50 {
			t.Errorf("colour %s appears in %d pixels of the screenshot", c, found[strings.ToUpper(c)])
		}
	}

	// Each chart paints its data: the page's charts alone, one per fixed
	// band of a second page, so every band's pixels belong to one chart
	// (legends and swatches, drawn in the same colours, are left out).
	charts := chartSVG.FindAllString(html, -1)
	const bandW, bandH = 1000, 440
	var cp strings.Builder
	cp.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0;background:#fff}` +
		`div.band{width:1000px;height:440px;overflow:hidden}svg.chart{display:block;width:1000px;height:auto}` +
		`svg.chart text{font-family:"Liberation Sans",Arial,sans-serif}</style></head><body>`)
	for _, c := range charts {
		cp.WriteString(`<div class="band">` + c + `</div>`)
	}
	cp.WriteString(`</body></html>`)
	chartsPage := filepath.Join(dir, "charts.html")
	if err := os.WriteFile(chartsPage, []byte(cp.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	chartsShot := filepath.Join(dir, "charts.png")
	runChromium(t, bin, dir, chartsPage, "--screenshot="+chartsShot, "--window-size="+strconv.Itoa(bandW)+","+strconv.Itoa(bandH*len(charts)))
	cimg := decodePNG(t, chartsShot)
	for i := range charts {
		band := image.Rect(0, i*bandH, bandW, (i+1)*bandH).Intersect(cimg.Bounds())
		sub := cimg.(interface {
			SubImage(image.Rectangle) image.Image
		}).SubImage(band)
		nw, _, f := screenshotStats(sub)
		data := 0
		for _, n := range f {
			data += n
		}
		if data < 200 || nw < 2000 {
			t.Errorf("chart %d paints %d data-coloured and %d non-white pixels: blank or without data", i, data, nw)
		}
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// screenshotStats counts non-white pixels, distinct colours, and pixels of
// each data colour (exact match, as Chromium paints solid fills and the
// middle of lines exactly).
func screenshotStats(img image.Image) (nonWhite, distinct int, found map[string]int) {
	want := map[uint32]string{}
	for c := range dataColors() {
		v, _ := strconv.ParseUint(strings.TrimPrefix(c, "#"), 16, 32)
		want[uint32(v)] = c
	}
	b := img.Bounds()
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
	found = map[string]int{}
	seen := make([]bool, 1<<24)
	for i := 0; i+3 < len(rgba.Pix); i += 4 {
		r, g, bb := uint32(rgba.Pix[i]), uint32(rgba.Pix[i+1]), uint32(rgba.Pix[i+2])
		if r < 250 || g < 250 || bb < 250 {
			nonWhite++
		}
		key := r<<16 | g<<8 | bb
		if !seen[key] {
			seen[key] = true
			distinct++
		}
		if c, ok := want[key]; ok {
			found[c]++
		}
	}
	return nonWhite, distinct, found
}
