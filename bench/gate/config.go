package gate

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Defaults of Config, used where a field is left at its zero value.
const (
	DefaultAlpha      = 0.05
	DefaultMinEffect  = 0.05
	DefaultMinSamples = 6
)

// DefaultUnits are the units compared when Config.Units is empty, and
// DefaultExactUnits those of them compared exactly.
var (
	DefaultUnits      = []string{"sec/op", "cpu-sec/op", "allocs/op"}
	DefaultExactUnits = []string{"allocs/op"}
)

// Values of Config.Normalize.
const (
	NormalizeAuto   = "auto"
	NormalizeAlways = "always"
	NormalizeNever  = "never"
)

// Values of Config.Correction.
const (
	CorrectionHolm = "holm"
	CorrectionNone = "none"
)

// Roles of a benchmark.
const (
	// RoleFloor marks a floor: it is measured to normalise others and
	// reported, but never gated (a slower floor is a slower machine).
	RoleFloor = "floor"
)

//go:embed default.yaml
var defaultYAML []byte

// ErrConfig is wrapped by every configuration error; test with errors.Is.
var ErrConfig = errors.New("gate: invalid config")

// Config says how to compare. Options in this package are plain config
// structs: a field left at its zero value takes the documented default, so
// the zero Config is usable (with no rules: every benchmark compared raw),
// and DefaultConfig is the one for sluice's own benchmarks. A value that is
// set but unusable is an error naming the field. A Config is plain data; it
// is not modified by Compare and is safe to share once built.
type Config struct {
	// Alpha is the significance level of the Mann-Whitney U test
	// (two-sided); default DefaultAlpha.
	Alpha float64 `yaml:"alpha" json:"alpha"`
	// MinEffect is the least relative change of the median that counts
	// (0.05 is 5%); default DefaultMinEffect. Negative means 0 (a config
	// file's "min_effect: 0" is read as -1).
	MinEffect float64 `yaml:"-" json:"min_effect"`
	// MinSamples is the fewest samples per side; fewer is an error.
	// Default DefaultMinSamples; a sample count at which the U test cannot
	// reach Alpha even with total separation is always an error.
	MinSamples int `yaml:"min_samples" json:"min_samples"`
	// Units are the units compared (benchfmt's tidied names: "sec/op",
	// not "ns/op"); default DefaultUnits. ExactUnits are those of them
	// compared without a test; default DefaultExactUnits.
	Units      []string `yaml:"units" json:"units"`
	ExactUnits []string `yaml:"exact_units" json:"exact_units"`
	// Normalize says when time is divided by the benchmark's floor:
	// NormalizeAuto (the default, ""): when the floor itself differs
	// between the sides significantly (the U test at the benchmark's
	// alpha) and by more than the benchmark's minimum effect, that is when
	// the machines differ; otherwise the raw values are compared, which
	// spares them the floor's own noise, and a change counts only when the
	// ratio of the medians to the floor's is larger than the minimum
	// effect too (Comparison.RatioDelta), unless the floor's median moved
	// by more than the minimum effect without being significant (by
	// chance). NormalizeAlways: whenever the floor is there.
	// NormalizeNever: never.
	Normalize string `yaml:"normalize" json:"normalize,omitempty"`
	// Correction is the correction for multiple comparisons: one report
	// makes many tests, and at alpha 0.05 each, twenty unchanged
	// benchmarks would raise a false alarm more often than not.
	// CorrectionHolm (the default, ""): Holm's step-down adjustment of the
	// p-values of every gated, tested comparison (floors and exact units
	// are not tests), which keeps the chance of any false alarm in the
	// report at most alpha. CorrectionNone judges each p alone.
	Correction string `yaml:"correction" json:"correction,omitempty"`
	// Rules refine the above per benchmark; see Rule.
	Rules []Rule `yaml:"-" json:"rules,omitempty"`
}

// Rule sets per-benchmark settings. Rules apply in order: every rule whose
// Match matches the benchmark's name (without the "Benchmark" prefix and
// the -GOMAXPROCS suffix, e.g. "Bucket/pass/serial") sets the fields it
// names, so later rules refine earlier ones.
type Rule struct {
	// Match is a regular expression (required).
	Match string `yaml:"match" json:"match"`
	// Role is "" or RoleFloor.
	Role string `yaml:"role" json:"role,omitempty"`
	// Floor names the benchmark whose time, measured in the same run and
	// package, divides this one's before comparing (e.g. "Floor/cas").
	// "-" means none (undoes an earlier rule).
	Floor string `yaml:"floor" json:"floor,omitempty"`
	// Alpha and MinEffect override Config's; nil keeps it.
	Alpha     *float64 `yaml:"alpha" json:"alpha,omitempty"`
	MinEffect *float64 `yaml:"-" json:"min_effect,omitempty"`
	// Units overrides Config.Units for these benchmarks.
	Units []string `yaml:"units" json:"units,omitempty"`
	// Better is "lower" or "higher": which direction of this benchmark's
	// units is an improvement, when the unit does not say (benchfmt's unit
	// metadata and its defaults for sec/op, B/op, allocs/op, B/s).
	Better string `yaml:"better" json:"better,omitempty"`
	// Ignore leaves the benchmark out of the comparison.
	Ignore bool `yaml:"ignore" json:"ignore,omitempty"`

	re *regexp.Regexp
}

// DefaultConfig returns the configuration for sluice's own benchmarks
// (bench/gate/default.yaml): alpha 0.05 for the whole report (Holm's
// correction), minimum effect 5% (10% for parallel benchmarks), at least 6
// samples per side, wall and CPU time judged as ratios to the floors of
// package bench when the machines differ, allocs/op exactly.
func DefaultConfig() Config {
	c, err := ParseConfig(bytes.NewReader(defaultYAML), "default.yaml")
	if err != nil {
		panic(err) // the embedded file is tested
	}
	return c
}

// LoadConfig reads a config file (see ParseConfig).
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("gate: %w", err)
	}
	defer f.Close()
	return ParseConfig(f, path)
}

// ParseConfig reads a config in YAML, the shape of bench/gate/default.yaml:
// alpha, min_effect, min_samples, units, exact_units, normalize,
// correction and rules (with
// match, role, floor, alpha, min_effect, units, better, ignore). Effects
// are fractions or percentages ("5%"). Unknown keys, duplicated keys and a
// second YAML document are errors. The result
// is validated.
func ParseConfig(r io.Reader, name string) (Config, error) {
	var file struct {
		Config    `yaml:",inline"`
		MinEffect string `yaml:"min_effect"`
		Rules     []struct {
			Rule      `yaml:",inline"`
			MinEffect string `yaml:"min_effect"`
		} `yaml:"rules"`
	}
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
	}
	for {
		var more yaml.Node
		err := dec.Decode(&more)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: %v", ErrConfig, name, err)
		}
		if len(more.Content) > 0 && more.Content[0].ShortTag() != "!!null" { // an empty document is none
			return Config{}, fmt.Errorf("%w: %s: more than one YAML document (a config is one)", ErrConfig, name)
		}
	}
	c := file.Config
	if file.MinEffect != "" {
		v, err := ParseFraction(file.MinEffect)
		if err != nil {
			return Config{}, fmt.Errorf("%w: %s: min_effect: %v", ErrConfig, name, err)
		}
		if v == 0 {
			v = -1 // written as 0: none, not the default that an unset 0 means
		}
		c.MinEffect = v
	}
	c.Rules = nil
	for i, fr := range file.Rules {
		r := fr.Rule
		if fr.MinEffect != "" {
			v, err := ParseFraction(fr.MinEffect)
			if err != nil {
				return Config{}, fmt.Errorf("%w: %s: rules[%d].min_effect: %v", ErrConfig, name, i, err)
			}
			r.MinEffect = &v
		}
		c.Rules = append(c.Rules, r)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// ParseFraction parses "5%" as 0.05 and "0.05" as 0.05 (for flags such as
// --min-effect).
func ParseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	div := 1.0
	if strings.HasSuffix(t, "%") {
		t, div = strings.TrimSpace(strings.TrimSuffix(t, "%")), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a fraction or percentage", s)
	}
	return v / div, nil
}

// Validate reports the first unusable field, naming it.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

func cfgErr(field string, v any, why string) error {
	return fmt.Errorf("%w: %s = %v: %s", ErrConfig, field, v, why)
}

func checkAlpha(field string, a float64) error {
	if !(a > 0 && a < 1) {
		return cfgErr(field, a, "want 0 < alpha < 1")
	}
	return nil
}

func checkEffect(field string, e float64) error {
	if math.IsNaN(e) || math.IsInf(e, 0) || e >= 10 {
		return cfgErr(field, e, "want a fraction such as 0.05 (5%)")
	}
	return nil
}

// resolve fills the defaults and compiles the rules.
func (c Config) resolve() (Config, error) {
	if c.Alpha == 0 {
		c.Alpha = DefaultAlpha
	}
	if err := checkAlpha("alpha", c.Alpha); err != nil {
		return c, err
	}
	if c.MinEffect == 0 {
		c.MinEffect = DefaultMinEffect
	}
	if err := checkEffect("min_effect", c.MinEffect); err != nil {
		return c, err
	}
	c.MinEffect = max(c.MinEffect, 0)
	switch c.Normalize {
	case "":
		c.Normalize = NormalizeAuto
	case NormalizeAuto, NormalizeAlways, NormalizeNever:
	default:
		return c, cfgErr("normalize", c.Normalize, `want "auto", "always" or "never"`)
	}
	switch c.Correction {
	case "":
		c.Correction = CorrectionHolm
	case CorrectionHolm, CorrectionNone:
	default:
		return c, cfgErr("correction", c.Correction, `want "holm" or "none"`)
	}
	if c.MinSamples == 0 {
		c.MinSamples = DefaultMinSamples
	}
	if c.MinSamples < 2 {
		return c, cfgErr("min_samples", c.MinSamples, "want at least 2")
	}
	if len(c.Units) == 0 {
		c.Units = DefaultUnits
	}
	if c.ExactUnits == nil {
		c.ExactUnits = DefaultExactUnits
	}
	rules := make([]Rule, len(c.Rules))
	for i, r := range c.Rules {
		field := fmt.Sprintf("rules[%d]", i)
		re, err := regexp.Compile(r.Match)
		if err != nil || r.Match == "" {
			return c, cfgErr(field+".match", strconv.Quote(r.Match), "want a regular expression")
		}
		r.re = re
		if r.Role != "" && r.Role != RoleFloor {
			return c, cfgErr(field+".role", r.Role, `want "" or "floor"`)
		}
		if r.Better != "" && r.Better != "lower" && r.Better != "higher" {
			return c, cfgErr(field+".better", r.Better, `want "lower" or "higher"`)
		}
		if r.Alpha != nil {
			if err := checkAlpha(field+".alpha", *r.Alpha); err != nil {
				return c, err
			}
		}
		if r.MinEffect != nil {
			if err := checkEffect(field+".min_effect", *r.MinEffect); err != nil {
				return c, err
			}
		}
		rules[i] = r
	}
	c.Rules = rules
	return c, nil
}

// settings are the resolved settings of one benchmark.
type settings struct {
	role      string
	floor     string
	alpha     float64
	minEffect float64
	units     []string
	better    int // 0: from the unit
	ignore    bool
}

func (c *Config) settingsFor(name string) settings {
	s := settings{alpha: c.Alpha, minEffect: c.MinEffect, units: c.Units}
	for _, r := range c.Rules {
		if !r.re.MatchString(name) {
			continue
		}
		if r.Role != "" {
			s.role = r.Role
		}
		switch r.Floor {
		case "":
		case "-":
			s.floor = ""
		default:
			s.floor = r.Floor
		}
		if r.Alpha != nil {
			s.alpha = *r.Alpha
		}
		if r.MinEffect != nil {
			s.minEffect = max(*r.MinEffect, 0)
		}
		if len(r.Units) > 0 {
			s.units = r.Units
		}
		switch r.Better {
		case "lower":
			s.better = -1
		case "higher":
			s.better = 1
		}
		if r.Ignore {
			s.ignore = true
		}
	}
	if s.role == RoleFloor {
		s.floor = ""
	}
	return s
}
