package suggest

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"account", "address", "channels", "duration", "warmup"}
	for _, c := range []struct{ name, want string }{
		{"acount", "account"},    // a letter dropped
		{"warmpu", "warmup"},     // two neighbours swapped
		{"aconut", "account"},    // one dropped and two swapped: 2 edits, not 3
		{"DURATION", "duration"}, // case is ignored
		{"frobnicate", ""},       // nothing close
		{"", ""},
	} {
		if got := Closest(c.name, known); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
