package suggest

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"account", "address", "channels", "duration", "queue", "warmup"}
	for _, c := range []struct{ name, want string }{
		{"acount", "account"},    // a letter dropped
		{"warmpu", "warmup"},     // two neighbours swapped
		{"aconut", "account"},    // one dropped and two swapped: 2 edits, not 3
		{"DURATION", "duration"}, // case is ignored
		{"duueu", ""},            // 3 edits from queue: too far for 5 letters
		{"frobnicate", ""},       // nothing close
		{"", ""},
	} {
		if got := Closest(c.name, known); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"ab", "ba", 1},     // one swap
		{"abcd", "acbd", 1}, // one swap inside
		{"bab", "aba", 2},   // not a swap: two edits
		{"babb", "abab", 2},
		{"ca", "abc", 3}, // a swapped pair is not edited again
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := editDistance(c.b, c.a); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.b, c.a, got, c.want)
		}
	}
}

func TestHint(t *testing.T) {
	if got := Hint(""); got != "" {
		t.Errorf("Hint(\"\") = %q", got)
	}
	if got, want := Hint("queue"), ` (did you mean "queue"?)`; got != want {
		t.Errorf("Hint = %q, want %q", got, want)
	}
}
