package cli

import (
	"fmt"
	"math"
	"strconv"
)

// count writes n and the noun, in the plural unless n is 1: "1 population",
// "2 populations". plural is the noun's plural where it is not noun+"s".
func count(n int, noun string, plural ...string) string {
	if n == 1 {
		return "1 " + noun
	}
	if len(plural) > 0 {
		return fmt.Sprintf("%d %s", n, plural[0])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// seedValue is the --seed flag: a uint64 whose error names the flag and
// the range instead of strconv's wording.
type seedValue struct{ v *uint64 }

func (s seedValue) String() string {
	if s.v == nil {
		return "0"
	}
	return strconv.FormatUint(*s.v, 10)
}

func (s seedValue) Set(text string) error {
	n, err := strconv.ParseUint(text, 0, 64)
	if err != nil {
		return fmt.Errorf("want an integer from 0 to %d", uint64(math.MaxUint64))
	}
	*s.v = n
	return nil
}

func (seedValue) Type() string { return "uint" }
