package cli

import "testing"

// A scenario's name never sends its results outside results/: path
// separators and other characters become '_', and a name of dots alone
// (".." would be the parent) is replaced.
func TestSafeNameStaysUnderResults(t *testing.T) {
	for in, want := range map[string]string{
		"quickstart": "quickstart",
		"flood v2.1": "flood_v2.1",
		"../etc":     ".._etc",
		"a/b":        "a_b",
		"..":         "scenario",
		".":          "scenario",
		"":           "scenario",
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}
