package shardmap

import "testing"

func TestRefundRestoresExactlyAndIgnoresUnknownKeys(t *testing.T) {
	m := newMap(t, 10, 5, Config{MaxKeys: 64})
	if o := take(m, 7, 0, 3); !o.Result.OK() {
		t.Fatalf("take: %+v", o)
	}
	if lv, _ := m.LevelAt(7, 0); lv != 2 {
		t.Fatalf("level after take = %v, want 2", lv)
	}
	if !m.RefundAt(7, 0, 1) {
		t.Fatal("refund of a tracked key reported false")
	}
	if lv, _ := m.LevelAt(7, 0); lv != 3 {
		t.Fatalf("level after refunding 1 of 3 = %v, want 3", lv)
	}
	m.RefundAt(7, 0, 2)
	if lv, _ := m.LevelAt(7, 0); lv != 5 {
		t.Fatalf("level after refund = %v, want 5", lv)
	}
	// A refund never lifts a bucket above its burst.
	m.TakeAt(7, 0, 1)
	m.RefundAt(7, 0, 4)
	if lv, _ := m.LevelAt(7, 0); lv != 5 {
		t.Fatalf("level after over-refund = %v, want 5", lv)
	}
	if m.RefundAt(99, 0, 1) {
		t.Fatal("refund of an untracked key reported true")
	}
	if m.Contains(99) {
		t.Fatal("refund inserted a key")
	}
}
