package trace

import (
	"os"
	"testing"
)

// A version 1 trace still reads: testdata/quickstart-v1-tail.trace is the
// header and the last block of the shipped quickstart trace as version 1
// wrote it (before the shipped trace was converted to version 2, record
// for record), so its records are the shipped trace's last ones.
func TestReadsVersion1(t *testing.T) {
	v1, err := os.ReadFile("testdata/quickstart-v1-tail.trace")
	if err != nil {
		t.Fatal(err)
	}
	if v1[8] != 1 {
		t.Fatalf("the fixture is version %d", v1[8])
	}
	v2, err := os.ReadFile("../scenarios/traces/quickstart.trace")
	if err != nil {
		t.Fatal(err)
	}
	if v2[8] != Version {
		t.Fatalf("the shipped trace is version %d, not %d", v2[8], Version)
	}
	old, r1, err := readAll(t, v1, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all, r2, err := readAll(t, v2, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Header() != r2.Header() {
		t.Fatalf("headers differ: %+v, %+v", r1.Header(), r2.Header())
	}
	if len(old) != 8182 || len(all) < len(old) {
		t.Fatalf("%d records in the fixture, %d in the shipped trace", len(old), len(all))
	}
	tail := all[len(all)-len(old):]
	for i := range old {
		if old[i] != tail[i] {
			t.Fatalf("record %d of the fixture: %+v, the shipped trace's: %+v", i, old[i], tail[i])
		}
	}
}
