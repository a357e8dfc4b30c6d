package scenarios

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse: any bytes either parse into a scenario that validates, or
// fail with an error; a *FieldError always carries a position.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(strings.Replace(minimal, "count: 3", "cuont: 3", 1)))
	f.Add([]byte("name: x\nduration: 1s\npolicy: {}\npopulations: [{name: a, behaviour: honest, count: 1}]\n"))
	f.Add([]byte("- [\n"))
	f.Add([]byte("name: &a x\nseed: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.yaml")
		if err != nil {
			var fe *FieldError
			if errors.As(err, &fe) && (fe.Line < 0 || fe.Col < 0) {
				t.Fatalf("negative position: %v", err)
			}
			return
		}
		if s.Duration <= 0 || len(s.Population) == 0 {
			t.Fatalf("accepted an invalid scenario: %+v", s)
		}
		_, _ = s.Policies()
	})
}

// FuzzParseThreshold: a threshold either parses into a known metric and
// comparison, or fails; it never panics.
func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"honest.drop_rate < 0.1%", "a.b.p99 <= 5ms", "all.drops.Lockout == 0", "x.y", "<", "a.drops. > 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		th, err := ParseThreshold(text)
		if err != nil {
			return
		}
		if th.Population == "" || th.Metric == "" || th.Op == "" {
			t.Fatalf("parsed %q into %+v", text, th)
		}
	})
}
