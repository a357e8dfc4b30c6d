package reports

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Population and kind names that join into the same file name still get a
// file each.
func TestRenderFilesKeepsJoinedNamesApart(t *testing.T) {
	r := New(Run{Scenario: "s", Driver: DriverSim, Duration: 2 * time.Second, Complete: true}, Environment{})
	v, err := r.AddVariant("v", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pk := range [][2]string{{"a", "b.c"}, {"a.b", "c"}} {
		k := v.AddPopulation(pk[0], "honest", Honest, 1).Kind(pk[1])
		k.Sent, k.Accepted = 1, 1
		h := hdrhistogram.New(1, 1e9, 3)
		if err := h.RecordValue(1000); err != nil {
			t.Fatal(err)
		}
		if err := k.AddHistogram(ResponseTime, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Finalize(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := RenderFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, HDRDir, "v", "*.hgrm"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		names := []string{}
		for _, f := range files {
			names = append(names, filepath.Base(f))
		}
		t.Fatalf("want 2 .hgrm files, got %v", names)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
