package shardmap

// hugePage is the size of a transparent huge page on x86-64 (and on
// arm64 with 4 KiB base pages; a 64 KiB-page kernel's are 512 MiB, and a
// slab then covers none, so the advice changes nothing there).
const hugePage = 2 << 20

// hugeSlab is the least size of all shards' cells together at which New
// cuts the first tables from slabs advised onto huge pages.
const hugeSlab = 4 * hugePage

// hugeSpan returns the whole huge pages inside the n bytes at p, as
// [beg, end); end <= beg when there is none.
func hugeSpan(p, n uintptr) (beg, end uintptr) {
	return (p + hugePage - 1) &^ (hugePage - 1), (p + n) &^ (hugePage - 1)
}
