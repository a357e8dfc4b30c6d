// Package reports is sluice's results model and its renderings.
//
// A Results value is everything one harness run measured: the run's metadata,
// the machine it ran on, and for each policy variant the per-population,
// per-message-kind counts, drops by reason, latency histograms, time series,
// summary measures and evaluated thresholds. The harness fills it (New,
// AddVariant, AddPopulation, Kind, AddHistogram, AddInterval, Finalize) and
// writes it with WriteFile; anything that reads a results file (the CLI's
// `sluice report`) uses ReadFile, then RenderFiles or WriteHTML.
//
// # The file format
//
// A results file is one JSON object whose "schema_version" is SchemaVersion
// (files from MinSchemaVersion on read too, as the current version).
// Readers reject any other version, unknown fields, trailing data,
// truncated files and files no run writes (no variants, a variant with no
// populations, a threshold over a population the variant lacks, an unknown
// drop reason) with errors that name the problem (see ErrVersion,
// ErrTruncated, ErrInvalid). Each variant records its scenario description
// and whether it was expected to pass or fail its thresholds (expect), so a
// report rendered from the file alone shows a bad policy kept for comparison
// as failing as expected. Files are written atomically: a temporary file in
// the same directory, fsync, rename, so an interrupted run never leaves a
// half-written file behind. Times are RFC 3339; durations and latencies are
// integer nanoseconds in fields whose names end in _ns. Latency histograms are
// HdrHistogram's standard V2 compressed encoding in base64 (the same payload
// as a .hlog line), beside precomputed percentiles.
//
// # Latency resolution
//
// A percentile (p50_ns, p99_ns...) and a maximum (max_ns) are the highest
// value of the histogram bucket they fall in, as HdrHistogram reports them
// (and as the .hgrm and .hlog files show them); min_ns is the lowest value of
// its bucket. A bucket's width is what its histogram resolves there: each
// histogram's encoding carries its lowest discernible value and significant
// digits. sluice's harness records in nanoseconds with a lowest discernible
// value of 1 ns, so a latency of 0 reads 0: a kind's histograms keep three
// significant digits (exact below 2048 ns, less than 0.1% above the value
// beyond), the time series' per-interval histograms two (exact below 256 ns,
// less than 1% above beyond). A p50 of 16.67 ms in a kind and of 16.71 ms in
// an interval can be one value seen at two resolutions. A histogram whose
// lowest discernible value is larger, L, has a first bucket [0, U) where U
// is the largest power of two not above L, so zeros read U - 1 (511 for
// L = 1000).
//
// # Renderings
//
// WriteHGRM writes HdrHistogram's percentile-distribution text (.hgrm),
// WriteHlog the interval-histogram log (.hlog), and WriteHTML one
// self-contained HTML page (inline SVG charts drawn with gonum.org/v1/plot, no
// network access at view time).
//
// # Concurrency
//
// Every type here is plain data with no internal locking: fill a Results
// from one goroutine (the harness merges its per-worker histograms and
// counters first), then read it from any number of goroutines while nothing
// changes it. The package-level functions keep no state.
//
// Package reports runs nothing and imports no other package of sluice: drop
// reasons are their stable names as strings.
package reports
