package benchkeys

import (
	"slices"
	"testing"
)

func TestPickStaysInRange(t *testing.T) {
	x := Start
	seen := make([]bool, 1000)
	for range 100000 {
		x = Next(x)
		i := Pick(x, len(seen))
		if i < 0 || i >= len(seen) {
			t.Fatalf("Pick(%#x, %d) = %d", x, len(seen), i)
		}
		seen[i] = true
	}
	if i := slices.Index(seen, false); i >= 0 {
		t.Errorf("index %d never drawn in 100000 draws over 1000", i)
	}
}

func TestFillKeepsWhatKeepAcceptsAndRepeats(t *testing.T) {
	refused := 0
	odd := func(k uint64) bool {
		if k&1 == 0 {
			refused++
			return false
		}
		return true
	}
	keys := Fill(100, odd)
	drawn := len(keys) + refused
	if len(keys) != 100 || refused == 0 {
		t.Fatalf("%d keys, %d refused", len(keys), refused)
	}
	for _, k := range keys {
		if k&1 == 0 {
			t.Fatalf("key %#x was refused but kept", k)
		}
	}
	if again := Fill(100, odd); !slices.Equal(again, keys) {
		t.Error("a second Fill drew other keys")
	}
	// Fill skips the refused keys of the sequence Random returns whole.
	var odds []uint64
	for _, k := range Random(drawn) {
		if k&1 == 1 {
			odds = append(odds, k)
		}
	}
	if !slices.Equal(odds, keys) {
		t.Error("Fill's keys are not the accepted ones of Random's, in order")
	}
}
