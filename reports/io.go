package reports

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Errors that reading a results file can return, wrapped with details;
// test them with errors.Is.
var (
	// ErrVersion: the file's schema_version is missing or is not
	// within [OldestSchemaVersion, SchemaVersion] (written by an older or
	// newer sluice).
	ErrVersion = errors.New("unsupported results schema version")
	// ErrTruncated: the file ends before its JSON does (an interrupted
	// copy or write), or is empty.
	ErrTruncated = errors.New("results file is truncated")
	// ErrInvalid: the file is not valid JSON, has unknown fields or
	// trailing data, or its content breaks the model's rules.
	ErrInvalid = errors.New("invalid results")
)

// Marshal validates r and encodes it as indented JSON ending in a newline.
func Marshal(r *Results) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return encode(r)
}

// encode is Marshal for results already validated: Validate decodes every
// kind's histogram, so callers that validated once (RenderFiles) skip it here.
func encode(r *Results) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("reports: encode results: %w", err)
	}
	return append(b, '\n'), nil
}

// Unmarshal decodes and validates a results file's content. It rejects
// truncated input (ErrTruncated), a missing, too old or newer schema version
// (ErrVersion, checked before anything else so a newer file is reported as
// such), and malformed JSON, unknown fields, trailing data, content that
// fails Validate, content that no run writes (see checkHollow), and
// time-series interval histograms (Interval.HDR) that do not decode or do
// not hold the interval's responses (ErrInvalid).
func Unmarshal(data []byte) (*Results, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("reports: file is empty: %w", ErrTruncated)
	}
	if !json.Valid(data) {
		return nil, syntaxError(data)
	}
	var probe struct {
		SchemaVersion *json.RawMessage `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("reports: not a results object: %v: %w", err, ErrInvalid)
	}
	if probe.SchemaVersion == nil {
		return nil, fmt.Errorf("reports: no schema_version field (not a sluice results file?): %w", ErrVersion)
	}
	var ver int
	if err := json.Unmarshal(*probe.SchemaVersion, &ver); err != nil {
		return nil, fmt.Errorf("reports: schema_version is %s, not an integer: %w", *probe.SchemaVersion, ErrVersion)
	}
	switch {
	case ver > SchemaVersion:
		return nil, fmt.Errorf("reports: schema version %d is newer than this build reads (%d): written by a newer sluice; upgrade to read it: %w", ver, SchemaVersion, ErrVersion)
	case ver < OldestSchemaVersion:
		return nil, fmt.Errorf("reports: schema version %d is older than this build reads (%d to %d): re-run the scenario, or use the sluice that wrote it: %w", ver, OldestSchemaVersion, SchemaVersion, ErrVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	r := new(Results)
	if err := dec.Decode(r); err != nil {
		return nil, decodeError(data, err)
	}
	r.SchemaVersion = SchemaVersion // an older version reads as the current one (see OldestSchemaVersion)
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("reports: data after the results object at byte %d: %w", dec.InputOffset(), ErrInvalid)
	}
	if ver < SchemaVersion {
		if err := upgrade(r, ver); err != nil {
			return nil, err
		}
	} else if err := checkScheduled(r); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if err := checkHollow(r); err != nil {
		return nil, err
	}
	if err := checkIntervalHistograms(r); err != nil {
		return nil, err
	}
	// MarshalIndent re-indents the policies; keep them compact in memory
	// as AddVariant does, so a round trip gives equal values.
	for _, v := range r.Variants {
		if len(v.Policy) > 0 {
			v.Policy = compactJSON(v.Policy)
		}
	}
	return r, nil
}

// syntaxError classifies invalid JSON as truncated (the input ends inside
// the value) or otherwise malformed.
func syntaxError(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("reports: file ends inside the JSON after %d bytes (interrupted write or copy?): %w", len(data), ErrTruncated)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset is just past the byte at fault.
		return fmt.Errorf("reports: %s: JSON syntax error: %v: %w", position(data, se.Offset-1), se, ErrInvalid)
	}
	if err == nil {
		return fmt.Errorf("reports: data after the results object at byte %d: %w", dec.InputOffset(), ErrInvalid)
	}
	return fmt.Errorf("reports: %v: %w", err, ErrInvalid)
}

// decodeError says where in data and in which field a results object
// failed to decode, in the file's terms rather than Go's: the line and
// column, the field's path and what it should hold, where the decoder
// knows them. It gives no position it does not know: an unknown field, a
// bad time and an error inside a threshold (decoded on its own) come
// without one.
func decodeError(data []byte, err error) error {
	var th *thresholdError
	if errors.As(err, &th) {
		var te *json.UnmarshalTypeError
		if errors.As(th.err, &te) {
			return fmt.Errorf("reports: a threshold's %s: a JSON %s where %s belongs: %w", strings.TrimPrefix(te.Field, "plain."), te.Value, jsonKind(te.Type), ErrInvalid)
		}
		return fmt.Errorf("reports: a threshold: %s: %w", strings.TrimPrefix(th.err.Error(), "json: "), ErrInvalid)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("reports: %s: %s: a JSON %s where %s belongs: %w", position(data, valueStart(data, te.Offset)), te.Field, te.Value, jsonKind(te.Type), ErrInvalid)
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("reports: %q is not a time (RFC 3339, such as 2026-11-30T13:15:32Z): %w", pe.Value, ErrInvalid)
	}
	return fmt.Errorf("reports: %s: %w", strings.TrimPrefix(err.Error(), "json: "), ErrInvalid)
}

// valueStart returns where the JSON value that ends at byte off of data
// begins: a string's opening quote, or the first byte of a number or
// literal. For an object or array, whose error comes at its opening
// bracket, that bracket.
func valueStart(data []byte, off int64) int64 {
	i := min(max(off, 0), int64(len(data)))
	if i > 0 && (data[i-1] == '{' || data[i-1] == '[') {
		return i - 1
	}
	if i > 0 && data[i-1] == '"' {
		for j := i - 2; j >= 0; j-- {
			if data[j] != '"' {
				continue
			}
			k := j // an escaped quote has an odd number of backslashes before it
			for k > 0 && data[k-1] == '\\' {
				k--
			}
			if (j-k)%2 == 0 {
				return j
			}
		}
		return i
	}
	for i > 0 && strings.IndexByte("+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", data[i-1]) >= 0 {
		i--
	}
	return i
}

// jsonKind names what a value of Go type t is in JSON.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if t == reflect.TypeFor[time.Duration]() {
			return "an integer (nanoseconds)"
		}
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number (0 or more)"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// position returns "line L, column C" of byte offset off in data (both
// from 1; off is clamped to data).
func position(data []byte, off int64) string {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

// Read reads and validates a results file's content from rd (see
// Unmarshal).
func Read(rd io.Reader) (*Results, error) {
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("reports: read results: %w", err)
	}
	return Unmarshal(data)
}

// ReadFile reads and validates the results file at path (see Unmarshal).
// Errors name the file.
func ReadFile(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	r, err := Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteFile validates r and writes it to path atomically: a reader sees
// either the previous file or the complete new one, never a partial one.
func WriteFile(path string, r *Results) error {
	if err := r.Validate(); err != nil {
		return err
	}
	return writeResultsFile(path, r)
}

// writeResultsFile is WriteFile for results already validated.
func writeResultsFile(path string, r *Results) error {
	b, err := encode(r)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// writeFileAtomic writes a file through fill into a temporary file in path's
// directory, syncs it, and renames it over path; on any error the temporary
// file is removed and path is untouched.
//
// Its errors name path, never the temporary file, which the caller never
// asked for: every error, fill's included, goes through cannot, which
// replaces an *fs.PathError or *os.LinkError in it (the temporary file's,
// from a write, sync, close or rename) with the error it carries, so
// errors.Is still finds what went wrong.
func writeFileAtomic(path string, fill func(io.Writer) error) error {
	return step(func() error { return writeFileAtomicNow(path, fill) })
}

func writeFileAtomicNow(path string, fill func(io.Writer) error) (err error) {
	cannot := func(err error) error {
		var pe *fs.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		}
		return fmt.Errorf("reports: cannot write %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return cannot(err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err = fill(bw); err != nil {
		return cannot(err)
	}
	if err = bw.Flush(); err != nil {
		return cannot(err)
	}
	if err = f.Chmod(0o644); err != nil {
		return cannot(err)
	}
	if err = f.Sync(); err != nil {
		return cannot(err)
	}
	if err = f.Close(); err != nil {
		return cannot(err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return cannot(err)
	}
	// Make the rename itself durable. Not every platform can sync a
	// directory; the file is complete either way.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

var reasonName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// Validate checks the rules a results file must follow: the schema version,
// a scenario name, a known driver, non-negative durations with the warmup
// inside the run, a well-formed SHA-256, unique non-empty names of variants,
// populations and kinds, known roles, non-negative counts, reason names that
// are identifiers, policies that are JSON objects, kinds' histograms that
// decode with the count they claim, and time series in time order. The
// intervals' histograms (Interval.HDR) are left to Unmarshal, which checks
// those of a file read in; AddInterval builds them from the histogram it
// counts. Errors wrap ErrInvalid (or ErrVersion) and name the offending
// field.
func (r *Results) Validate() error {
	if r == nil {
		return fmt.Errorf("reports: nil results: %w", ErrInvalid)
	}
	if r.SchemaVersion != SchemaVersion {
		return fmt.Errorf("reports: schema_version is %d, want %d: %w", r.SchemaVersion, SchemaVersion, ErrVersion)
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("reports: "+format+": %w", append(a, ErrInvalid)...)
	}
	run := r.Run
	if run.Scenario == "" {
		return bad("run.scenario is empty")
	}
	if run.Driver != DriverSim && run.Driver != DriverLoopback {
		return bad("run.driver is %q, want %q or %q", run.Driver, DriverSim, DriverLoopback)
	}
	if run.ScenarioSHA256 != "" {
		if b, err := hex.DecodeString(run.ScenarioSHA256); err != nil || len(b) != 32 {
			return bad("run.scenario_sha256 %q is not 64 hex digits", run.ScenarioSHA256)
		}
	}
	if run.Duration < 0 || run.Warmup < 0 || run.Interval < 0 {
		return bad("run durations must not be negative (duration %v, warmup %v, interval %v)", run.Duration, run.Warmup, run.Interval)
	}
	if run.Warmup > run.Duration {
		return bad("run.warmup_ns %v is longer than run.duration_ns %v", run.Warmup, run.Duration)
	}
	if !run.Started.IsZero() && !run.Finished.IsZero() && run.Finished.Before(run.Started) {
		return bad("run.finished %v is before run.started %v", run.Finished, run.Started)
	}
	for i, v := range r.Variants {
		if v != nil && len(run.PlannedVariants) > 0 && !slices.Contains(run.PlannedVariants, v.Name) {
			return bad("variants[%d] %q is not in run.planned_variants", i, v.Name)
		}
	}
	seenV := map[string]bool{}
	for i, v := range r.Variants {
		if v == nil {
			return bad("variants[%d] is null", i)
		}
		if v.Name == "" {
			return bad("variants[%d].name is empty", i)
		}
		if seenV[v.Name] {
			return bad("variant name %q appears twice", v.Name)
		}
		seenV[v.Name] = true
		if len(v.Policy) > 0 {
			if err := checkObject(v.Policy); err != nil {
				return bad("variant %q: policy: %v", v.Name, err)
			}
		}
		if err := v.Server.validate(); err != nil {
			return bad("variant %q: server: %v", v.Name, err)
		}
		if err := validateServers(v); err != nil {
			return bad("variant %q: %v", v.Name, err)
		}
		if v.Expect != "" && v.Expect != ExpectPass && v.Expect != ExpectFail {
			return bad("variant %q: expect is %q, want %q or %q", v.Name, v.Expect, ExpectPass, ExpectFail)
		}
		if v.Stopped < 0 || v.Stopped > run.Duration {
			return bad("variant %q: stopped_ns %v is not within the run's %v", v.Name, v.Stopped, run.Duration)
		}
		if c := v.ServerCPU; c != nil && (c.Frames < 0 || c.CPU < 0 || c.NsPerFrame < 0) {
			return bad("variant %q: server_cpu has a negative field", v.Name)
		}
		if c := v.ServerCPU; c != nil && !finite(c.NsPerFrame) {
			return bad("variant %q: server_cpu.ns_per_frame is not finite", v.Name)
		}
		for j, t := range v.Thresholds {
			if t.Expr == "" {
				return bad("variant %q: thresholds[%d].expr is empty", v.Name, j)
			}
		}
		seenP := map[string]bool{}
		for j, p := range v.Populations {
			if p == nil {
				return bad("variant %q: populations[%d] is null", v.Name, j)
			}
			where := fmt.Sprintf("variant %q population %q", v.Name, p.Name)
			if p.Name == "" {
				return bad("variant %q: populations[%d].name is empty", v.Name, j)
			}
			if seenP[p.Name] {
				return bad("variant %q: population name %q appears twice", v.Name, p.Name)
			}
			seenP[p.Name] = true
			if p.Role != Honest && p.Role != Hostile {
				return bad("%s: role is %q, want %q or %q", where, p.Role, Honest, Hostile)
			}
			if p.Clients < 0 {
				return bad("%s: clients is negative", where)
			}
			if err := validateSummary(p); err != nil {
				return bad("%s: summary: %v", where, err)
			}
			seenK := map[string]bool{}
			for l, k := range p.Kinds {
				if k == nil {
					return bad("%s: kinds[%d] is null", where, l)
				}
				if k.Kind == "" {
					return bad("%s: kinds[%d].kind is empty", where, l)
				}
				if seenK[k.Kind] {
					return bad("%s: kind %q appears twice", where, k.Kind)
				}
				seenK[k.Kind] = true
				kw := fmt.Sprintf("%s kind %q", where, k.Kind)
				if k.Sent < 0 || k.Accepted < 0 || k.SentBytes < 0 || k.AcceptedBytes < 0 || k.Unknown < 0 {
					return bad("%s: negative count", kw)
				}
				if k.Unknown > k.Sent {
					return bad("%s: unknown %d is more than sent %d", kw, k.Unknown, k.Sent)
				}
				if err := validateDrops(k.Drops); err != nil {
					return bad("%s: drops: %v", kw, err)
				}
				if k.NotSent < 0 || k.Scheduled < 0 {
					return bad("%s: negative count", kw)
				}
				if k.Scheduled != 0 && k.Scheduled != k.Sent+k.NotSent {
					return bad("%s: scheduled %d is not sent %d + not_sent %d", kw, k.Scheduled, k.Sent, k.NotSent)
				}
				if k.IsSessions() && (k.NotSent != 0 || k.Scheduled != 0) {
					return bad("%s: the session row counts sessions ended, none scheduled or not sent", kw)
				}
				if k.IsSessions() && (k.Accepted != 0 || k.Dropped() != k.Sent) {
					return bad("%s: the session row gives every session ended its reason (accepted %d, sent %d, reasons %d)", kw, k.Accepted, k.Sent, k.Dropped())
				}
				for _, m := range []Metric{ResponseTime, ServiceTime, SendLag} {
					if err := validateHistogram(k.Histogram(m)); err != nil {
						return bad("%s: %s: %v", kw, m, err)
					}
				}
			}
			var end int64 = -1 << 63
			for l, iv := range p.Series {
				if iv.Length <= 0 || iv.Start < 0 {
					return bad("%s: series[%d] has start %v and length %v", where, l, iv.Start, iv.Length)
				}
				if int64(iv.Start) < end {
					return bad("%s: series[%d] starts before the previous interval ends", where, l)
				}
				end = int64(iv.Start + iv.Length)
				if iv.Sent < 0 || iv.NotSent < 0 || iv.Accepted < 0 || iv.Responses < 0 || iv.P50 < 0 || iv.P99 < 0 {
					return bad("%s: series[%d]: negative count", where, l)
				}
				if err := validateDrops(iv.Drops); err != nil {
					return bad("%s: series[%d].drops: %v", where, l, err)
				}
			}
		}
	}
	return nil
}

// checkHollow rejects a file read in whose content no run writes, which
// would render a page that says nothing or contradicts itself (a hand-edited
// file): no variants, a variant with no populations, a threshold whose
// expression reads a population (population[.kind].metric) that the variant
// does not have (other than "all"), a drop reason this version does not know
// (see KnownReasons: a new reason comes with a new SchemaVersion), or a time
// series with no interval length (run.interval_ns). Results built in memory
// may still be partial (Validate allows them). r has passed Validate.
// Errors wrap ErrInvalid and name the field.
func checkHollow(r *Results) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("reports: "+format+": %w", append(a, ErrInvalid)...)
	}
	if len(r.Variants) == 0 {
		return bad("variants is empty: a results file holds at least one variant")
	}
	known := func(m map[string]int64) error {
		for _, reason := range sortedReasons(m) {
			if reasonRank(reason) == len(knownReasons) {
				return fmt.Errorf("reason %q is not a drop reason this version knows", reason)
			}
		}
		return nil
	}
	for _, v := range r.Variants {
		if len(v.Populations) == 0 {
			return bad("variant %q: populations is empty: a variant holds at least one population", v.Name)
		}
		for j, t := range v.Thresholds {
			lhs, _, _ := strings.Cut(strings.TrimSpace(t.Expr), " ")
			if pop, _, ok := strings.Cut(lhs, "."); ok && pop != "all" && v.Population(pop) == nil {
				return bad("variant %q: thresholds[%d].expr %q reads population %q, which the variant does not have", v.Name, j, t.Expr, pop)
			}
		}
		for _, p := range v.Populations {
			where := fmt.Sprintf("variant %q population %q", v.Name, p.Name)
			for _, k := range p.Kinds {
				if err := known(k.Drops); err != nil {
					return bad("%s kind %q: drops: %v", where, k.Kind, err)
				}
			}
			if len(p.Series) > 0 && r.Run.Interval <= 0 {
				return bad("%s: series has %d intervals but run.interval_ns is %d", where, len(p.Series), r.Run.Interval)
			}
			for l, iv := range p.Series {
				if err := known(iv.Drops); err != nil {
					return bad("%s: series[%d].drops: %v", where, l, err)
				}
			}
		}
	}
	return nil
}

// checkIntervalHistograms checks that every time-series interval's HDR
// decodes and holds the responses the interval claims, for results read
// from a file: damaged ones are named where they are rather than failing
// the chart or the .hlog export. Results built in memory skip it (Validate
// does not decode them), since AddInterval encodes each one from the
// histogram it counts. r has passed Validate. Errors wrap ErrInvalid.
func checkIntervalHistograms(r *Results) error {
	for _, v := range r.Variants {
		for _, p := range v.Populations {
			for l, iv := range p.Series {
				if iv.HDR == "" {
					continue
				}
				d, err := (&Histogram{HDR: iv.HDR}).Decode()
				if err != nil {
					return fmt.Errorf("reports: variant %q population %q: series[%d].hdr: %v: %w", v.Name, p.Name, l, err, ErrInvalid)
				}
				if d.TotalCount() != iv.Responses {
					return fmt.Errorf("reports: variant %q population %q: series[%d]: responses is %d but the hdr encoding holds %d values: %w", v.Name, p.Name, l, iv.Responses, d.TotalCount(), ErrInvalid)
				}
			}
		}
	}
	return nil
}

func validateDrops(m map[string]int64) error {
	if _, ok := m[NotSentReason]; ok {
		return fmt.Errorf("%s is not a drop (a message never written): it counts in not_sent", NotSentReason)
	}
	for r, n := range m {
		if !reasonName.MatchString(r) {
			return fmt.Errorf("reason %q is not a reason name", r)
		}
		if n < 0 {
			return fmt.Errorf("%s count is negative", r)
		}
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func validateSummary(p *Population) error {
	s := &p.Summary
	if !finite(s.AdmittedPerSec) || !finite(s.AdmittedBytesPerSec) || s.AdmittedPerSec < 0 || s.AdmittedBytesPerSec < 0 {
		return errors.New("a rate is negative or not finite")
	}
	if s.Scheduled < 0 || s.Sent < 0 || s.NotSent < 0 || s.Accepted < 0 || s.Dropped < 0 || s.FalseDisconnects < 0 || s.FalseLockouts < 0 {
		return errors.New("negative count")
	}
	switch why := p.NoDropRate(); {
	case s.LossRate != nil && why != "":
		return fmt.Errorf("loss_rate is given but there can be none (%s)", why)
	case s.LossRate != nil && !(*s.LossRate >= 0 && *s.LossRate <= 1):
		return fmt.Errorf("loss_rate %v is outside [0, 1]", *s.LossRate)
	}
	// A drop rate or the reason for none, never both, and never a rate
	// where the counts are in different units. (Neither is a summary that
	// Finalize did not derive.)
	switch why := p.NoDropRate(); {
	case s.DropRate != nil && s.NoDropRate != "":
		return errors.New("drop_rate is given and no_drop_rate says there is none")
	case s.DropRate != nil && why != "":
		return fmt.Errorf("drop_rate is given but there can be none (%s)", why)
	case s.DropRate != nil && !(*s.DropRate >= 0 && *s.DropRate <= 1):
		return fmt.Errorf("drop_rate %v is outside [0, 1]", *s.DropRate)
	case s.DropRate == nil && s.NoDropRate != "" && s.NoDropRate != why:
		if why == "" {
			return fmt.Errorf("no_drop_rate says there is none (%s), but the population has one", s.NoDropRate)
		}
		return fmt.Errorf("no_drop_rate is %q, but the reason there is none is %q", s.NoDropRate, why)
	}
	if c := s.CutOff; c != nil && (c.Clients < 0 || c.Of < c.Clients || c.P50 < 0 || c.Max < c.P50 || c.AllP50 < c.P50 || c.Clients == 0 && c.AllP50 != Never) {
		return fmt.Errorf("cut_off is inconsistent (%d of %d clients, p50 %v, max %v, all_p50 %v)", c.Clients, c.Of, c.P50, c.Max, c.AllP50)
	}
	return nil
}

func validateHistogram(h *Histogram) error {
	if h == nil {
		return nil
	}
	d, err := h.Decode()
	if err != nil {
		return err
	}
	if d.TotalCount() != h.Count {
		return fmt.Errorf("count is %d but the hdr encoding holds %d values", h.Count, d.TotalCount())
	}
	if !finite(h.Mean) {
		return errors.New("mean_ns is not finite")
	}
	if h.MergeDropped < 0 {
		return errors.New("merge_dropped is negative")
	}
	return nil
}

// checkScheduled holds a file of the current version to what Finalize
// derives: every message kind's scheduled is its sent plus not_sent, and
// every summary's scheduled, sent and not_sent are its kinds' totals. r has
// been decoded, not yet validated. Errors wrap ErrInvalid.
func checkScheduled(r *Results) error {
	for _, v := range r.Variants {
		if v == nil {
			continue
		}
		for _, p := range v.Populations {
			if p == nil {
				continue
			}
			var sent, notSent int64
			for _, k := range p.Kinds {
				if k == nil {
					continue
				}
				if k.IsSessions() {
					if k.Scheduled != 0 || k.NotSent != 0 {
						return fmt.Errorf("reports: variant %q population %q kind %q: the session row counts sessions ended, none scheduled or not sent: %w", v.Name, p.Name, k.Kind, ErrInvalid)
					}
					continue
				}
				if k.Scheduled != k.Sent+k.NotSent {
					return fmt.Errorf("reports: variant %q population %q kind %q: scheduled %d is not sent %d + not_sent %d: %w", v.Name, p.Name, k.Kind, k.Scheduled, k.Sent, k.NotSent, ErrInvalid)
				}
				sent += k.Sent
				notSent += k.NotSent
			}
			if s := p.Summary; s.Sent != sent || s.NotSent != notSent || s.Scheduled != sent+notSent {
				return fmt.Errorf("reports: variant %q population %q: summary scheduled %d, sent %d, not_sent %d, but its kinds total %d, %d and %d: %w", v.Name, p.Name, s.Scheduled, s.Sent, s.NotSent, sent+notSent, sent, notSent, ErrInvalid)
			}
		}
	}
	return nil
}

// upgrade converts results decoded from a file of an older schema version
// (OldestSchemaVersion or later) to SchemaVersion. From version 5: a
// message never written was a NotSent drop counted in sent; it moves to
// not_sent, out of sent and drops (kinds and intervals), and the summaries
// are derived again (Finalize).
func upgrade(r *Results, from int) error {
	if from < 6 {
		for _, v := range r.Variants {
			if v == nil {
				continue
			}
			for _, p := range v.Populations {
				if p == nil {
					continue
				}
				for _, k := range p.Kinds {
					if k == nil || k.IsSessions() {
						continue
					}
					n := k.Drops[NotSentReason]
					delete(k.Drops, NotSentReason)
					if n > k.Sent {
						return fmt.Errorf("reports: schema version %d file: variant %q population %q kind %q: %d NotSent of %d sent: %w", from, v.Name, p.Name, k.Kind, n, k.Sent, ErrInvalid)
					}
					k.Sent, k.NotSent = k.Sent-n, n
				}
				for i := range p.Series {
					iv := &p.Series[i]
					iv.NotSent = iv.Drops[NotSentReason]
					delete(iv.Drops, NotSentReason)
				}
			}
		}
	}
	r.SchemaVersion = SchemaVersion
	if err := r.Validate(); err != nil {
		return err
	}
	return r.Finalize()
}
