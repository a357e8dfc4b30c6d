// Package scenarios reads, validates and runs scenario files: YAML documents
// that say who plays (populations of honest, laggy and hostile clients), for
// how long, against which policy and which named variants of it, and what
// counts as success (thresholds over the results).
//
// Parsing is strict: an unknown key, a wrong type or an impossible value is
// a *FieldError with file:line:column and the field path, and a suggestion
// when a key looks misspelt. A parsed Scenario is immutable and safe to share
// between goroutines; running it is done by Run, which gives every variant
// the same seed and therefore the same traffic.
package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/sluicedev/sluice/core"
	"github.com/sluicedev/sluice/internal/yamlerr"
	"github.com/sluicedev/sluice/loadgen/behave"
	"github.com/sluicedev/sluice/loadgen/drive"
	"github.com/sluicedev/sluice/reports"
	"gopkg.in/yaml.v3"
)

// Drivers a scenario may name: the results record the driver, so these are
// the results' names.
const (
	DriverSim      = reports.DriverSim
	DriverLoopback = reports.DriverLoopback
)

// Arrival kinds.
const (
	ArrivalAll     = "all"
	ArrivalRamp    = "ramp"
	ArrivalPoisson = "poisson"
)

// Scenario is one parsed scenario file.
type Scenario struct {
	Name        string        `yaml:"name"`
	Description string        `yaml:"description"`
	Seed        uint64        `yaml:"seed"`
	Duration    time.Duration `yaml:"duration"`
	Warmup      time.Duration `yaml:"warmup"`
	// Interval is the width of one point of the time series (default 1s).
	Interval time.Duration `yaml:"interval"`
	Driver   string        `yaml:"driver"`
	// Target is HOST:PORT of a server sluice does not start (see
	// Options.Target); empty for the reference server a run starts itself.
	Target string `yaml:"target"`
	// Transport is what the clients speak the protocol over: tcp (the
	// default), ws (WebSocket, one binary message per frame) or udp (one
	// frame per datagram; see docs/transports.md), on either driver, but
	// for the populations that name their own (Population.Transport).
	Transport string `yaml:"transport"`
	// Servers is the number of game servers the clients spread over
	// (default 1), each with its own gate, sharing the policy's fleet
	// section if it has one; Redis is where a loopback run of several
	// keeps the fleet's buckets: "start" (a redis-server the run starts
	// on a free loopback port) or empty (the fleet section's own
	// addresses). See servers.go and docs/fleet.md.
	Servers int    `yaml:"servers"`
	Redis   string `yaml:"redis"`
	// Network is a seeded loss and reorder model of the clients'
	// datagrams over transport udp, e.g. {loss: 0.02, reorder: 0.01,
	// reorderDelay: 20ms} (drive.Network; docs/transports.md).
	Network drive.Network `yaml:"network,omitempty"`
	// Policy is the base policy, inline; PolicyFile names one instead,
	// relative to the scenario file.
	Policy     yaml.Node    `yaml:"policy"`
	PolicyFile string       `yaml:"policy_file"`
	Variants   []Variant    `yaml:"variants"`
	Population []Population `yaml:"populations"`
	Thresholds []string     `yaml:"thresholds"`

	// File is the path the scenario was read from, and SHA256 the hash of
	// its bytes; both are filled by Load.
	File   string `yaml:"-"`
	SHA256 string `yaml:"-"`

	thresholds []Threshold
	// data is the file's bytes, for checks of the scenario at another
	// duration (checkDuration).
	data []byte
	// intervalDefault: the file sets no interval, and Interval is its
	// default.
	intervalDefault bool
}

// Variant is a named policy: the base policy with the fields in Set
// replaced. Mappings merge key by key; a list of mappings whose items have a
// name merges item by item; anything else replaces.
type Variant struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Expect is "pass" (the default) or "fail": a deliberately bad policy
	// kept for comparison is expected to fail its thresholds, and the run
	// passes when it does.
	Expect string    `yaml:"expect"`
	Set    yaml.Node `yaml:"set"`
	// Servers, if set, is the variant's number of game servers instead of
	// the scenario's.
	Servers int `yaml:"servers"`
}

// Population is a group of clients that behave alike.
type Population struct {
	Name      string `yaml:"name"`
	Behaviour string `yaml:"behaviour"`
	Count     int    `yaml:"count"`
	// Hostile marks the population whose admitted traffic counts against
	// the policy; by default populations whose behaviour is a hostile one.
	Hostile *bool   `yaml:"hostile"`
	Arrival Arrival `yaml:"arrival"`
	// Start and Stop bound the population's activity within the run
	// (default: the whole run).
	Start time.Duration `yaml:"start"`
	Stop  time.Duration `yaml:"stop"`
	// PerAddress is how many clients share one source address (a NAT
	// crowd); PerAccount how many share one account (a hot key). Default 1.
	PerAddress int `yaml:"per_address"`
	PerAccount int `yaml:"per_account"`
	// SameAddressAs names an earlier population whose first source
	// address this one's clients all dial from (a host behind the same
	// NAT as a crowd).
	SameAddressAs string `yaml:"same_address_as"`
	// Transport is what this population's clients speak the protocol
	// over (tcp, ws or udp), when not the scenario's; --transport
	// (Options.Transport) overrides it.
	Transport string `yaml:"transport"`
	// Params are the behaviour's parameters; see the loadgen package doc.
	Params yaml.Node `yaml:"params"`

	behaviour behave.Behaviour
	// roleFromTrace says that Hostile came from the labels of the trace
	// the population replays (the report says so).
	roleFromTrace bool
	// roleFromLabel says that Hostile came from the label the trace
	// population selects its sessions by, and where their labels come
	// from (the report says so).
	roleFromLabel string
	// behaviourAt is where the file names the behaviour, for errors
	// about what it sends.
	behaviourAt *yaml.Node
}

// Arrival says when a population's clients connect.
type Arrival struct {
	// Kind is all (every client at Start), ramp (evenly over Over) or
	// poisson (exponential gaps at Rate clients per second).
	Kind string        `yaml:"kind"`
	Over time.Duration `yaml:"over"`
	Rate float64       `yaml:"rate"`
}

// Load reads and validates a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := readBounded(path, "the scenario file")
	if err != nil {
		if errors.Is(err, ErrTooBig) {
			return nil, err
		}
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	return Parse(data, path)
}

// Parse validates a scenario from its bytes; file names it in errors and
// anchors a relative policy_file.
func Parse(data []byte, file string) (*Scenario, error) {
	if len(data) > MaxFileBytes {
		return nil, tooBig(file, "the scenario file")
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the file is empty: a scenario needs at least name, duration, a policy and populations", file)
		}
		return nil, yamlSyntaxError(file, data, err)
	}
	// A scenario is one document, as a policy file is: a second would be
	// ignored.
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &FieldError{File: file, Line: extra.Line, Col: extra.Column, Msg: "more than one YAML document: a scenario file holds one (a second would be ignored)"}
	case !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%s: a second YAML document: %v", file, err)
	}
	if fe := checkNode(&root, reflect.TypeOf(Scenario{}), ""); fe != nil {
		fe.File = file
		return nil, fe
	}
	var s Scenario
	if err := root.Decode(&s); err != nil {
		return nil, yamlSyntaxError(file, data, err)
	}
	s.File, s.data = file, data
	sum := sha256.Sum256(data)
	s.SHA256 = hex.EncodeToString(sum[:])
	if err := s.validate(&root); err != nil {
		return nil, err
	}
	return &s, nil
}

// yamlSyntaxError places a yaml.v3 error in file (its bytes data) at the
// line and column of the character at fault (see yamlerr.Place).
func yamlSyntaxError(file string, data []byte, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: %s", file, te.Errors[0])
	}
	if line, col, msg := yamlerr.Place(data, err); line > 0 {
		return &FieldError{File: file, Line: line, Col: col, Msg: msg}
	}
	return fmt.Errorf("%s: %v", file, err)
}

// field returns the node of a top-level key, for positions in errors.
func field(root *yaml.Node, path ...any) *yaml.Node {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, p := range path {
		switch p := p.(type) {
		case string:
			var next *yaml.Node
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == p {
						next = n.Content[i+1]
					}
				}
			}
			if next == nil {
				return n
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || p >= len(n.Content) {
				return n
			}
			n = n.Content[p]
		}
	}
	return n
}

func (s *Scenario) fail(root *yaml.Node, path string, at []any, msg string) error {
	n := field(root, at...)
	return &FieldError{File: s.File, Line: n.Line, Col: n.Column, Path: path, Msg: msg}
}

func (s *Scenario) validate(root *yaml.Node) error {
	if err := s.checkBounds(root); err != nil {
		return err
	}
	if s.Name == "" {
		return s.fail(root, "name", nil, "is required")
	}
	if s.Duration <= 0 {
		return s.fail(root, "duration", []any{"duration"}, "must be a positive duration such as 20s")
	}
	if s.Duration > behave.MaxDuration {
		return s.fail(root, "duration", []any{"duration"}, fmt.Sprintf("%v is longer than the longest run, %v", s.Duration, behave.MaxDuration))
	}
	if s.Warmup < 0 || s.Warmup >= s.Duration {
		return s.fail(root, "warmup", []any{"warmup"}, "must be at least 0 and shorter than duration")
	}
	if s.Interval == 0 {
		s.Interval, s.intervalDefault = time.Second, true
	}
	if s.Interval < 10*time.Millisecond || s.Interval > s.Duration {
		return s.fail(root, "interval", []any{"interval"}, "must be between 10ms and the duration")
	}
	if s.Target != "" {
		if err := checkTarget(s.Target); err != nil {
			return s.fail(root, "target", []any{"target"}, err.Error())
		}
		if s.Driver != "" && s.Driver != DriverLoopback {
			return s.fail(root, "driver", []any{"driver"}, "a target is driven over sockets: driver loopback (or none), not "+s.Driver)
		}
		s.Driver = DriverLoopback
	}
	if err := drive.CheckTransport(s.Transport); err != nil {
		return s.fail(root, "transport", []any{"transport"}, err.Error())
	}
	if s.Driver == "" {
		s.Driver = DriverSim
	}
	if !validDriver(s.Driver) {
		return s.fail(root, "driver", []any{"driver"}, notADriver(s.Driver))
	}
	if s.Policy.Kind == 0 && s.PolicyFile == "" {
		return s.fail(root, "policy", nil, "is required: inline, or policy_file")
	}
	if s.Policy.Kind != 0 && s.PolicyFile != "" {
		return s.fail(root, "policy_file", []any{"policy_file"}, "give either policy or policy_file, not both")
	}
	if isNull(&s.Policy) {
		// "policy:" with nothing after it: a policy with no channel, under
		// which every message a behaviour sends is refused.
		return s.fail(root, "policy", []any{"policy"}, "is empty: give the policy's fields, or policy_file")
	}
	if s.PolicyFile != "" {
		if !filepath.IsAbs(s.PolicyFile) {
			s.PolicyFile = filepath.Join(filepath.Dir(s.File), s.PolicyFile)
		}
		data, err := readBounded(s.PolicyFile, "the policy file")
		if err != nil {
			return s.fail(root, "policy_file", []any{"policy_file"}, err.Error())
		}
		// Read as core reads a policy file (LoadPolicy, sluice audit): one
		// document, a second refused.
		doc, err := core.PolicyDocument(data)
		if err != nil {
			return policyFieldError(err, s.PolicyFile, "")
		}
		if doc == nil || len(doc.Content) == 0 || isNull(doc.Content[0]) {
			return s.fail(root, "policy_file", []any{"policy_file"}, fmt.Sprintf("%s is empty", s.PolicyFile))
		}
		s.Policy = *doc.Content[0]
		if err := checkPolicy(&s.Policy, s.PolicyFile, ""); err != nil {
			return err
		}
	} else if err := checkPolicy(&s.Policy, s.File, "policy"); err != nil {
		return err
	}
	// Names used twice (variants, populations) were refused by checkNode.
	for i, v := range s.Variants {
		p := fmt.Sprintf("variants[%d]", i)
		if v.Name == "" {
			return s.fail(root, p+".name", []any{"variants", i}, "is required")
		}
		switch v.Expect {
		case "":
			s.Variants[i].Expect = "pass"
		case "pass", "fail":
		default:
			return s.fail(root, p+".expect", []any{"variants", i, "expect"}, fmt.Sprintf("%q is not pass or fail", v.Expect))
		}
		if v.Set.Kind != 0 {
			if err := checkPolicy(&s.Variants[i].Set, s.File, p+".set"); err != nil {
				return err
			}
			if fe := newChannel(&s.Policy, &s.Variants[i].Set, p+".set"); fe != nil {
				fe.File = s.File
				return fe
			}
		}
	}
	if err := s.checkServers(root); err != nil {
		return err
	}
	if len(s.Population) == 0 {
		return s.fail(root, "populations", nil, "at least one population is required")
	}
	popNames := map[string]bool{} // for the thresholds below
	var popList []string          // in file order
	for i := range s.Population {
		p := &s.Population[i]
		path := fmt.Sprintf("populations[%d]", i)
		at := func(k string) []any { return []any{"populations", i, k} }
		switch {
		case p.Name == "":
			return s.fail(root, path+".name", []any{"populations", i}, "is required")
		case p.Name == "all" || strings.ContainsAny(p.Name, ".<>= \t"):
			// A threshold names a population before its first dot and
			// its comparison, and "all" means every population there.
			return s.fail(root, path+".name", at("name"), fmt.Sprintf("%q cannot be named in a threshold: use none of . < > = or spaces, and not \"all\"", p.Name))
		case p.Behaviour == traceBehaviour && p.Count > 1:
			return s.fail(root, path+".count", at("count"), "a trace population's sessions come from its trace: leave count out (or 1)")
		case p.Behaviour != traceBehaviour && (p.Count < 1 || p.Count > 100000):
			return s.fail(root, path+".count", at("count"), "must be between 1 and 100000")
		case p.Start < 0 || p.Start >= s.Duration:
			return s.fail(root, path+".start", at("start"), "must be at least 0 and before the end of the run")
		}
		popNames[p.Name] = true
		popList = append(popList, p.Name)
		if p.Stop == 0 {
			p.Stop = s.Duration
		}
		if p.Stop <= p.Start || p.Stop > s.Duration {
			return s.fail(root, path+".stop", at("stop"), "must be after start and no later than duration")
		}
		switch p.Arrival.Kind {
		case "":
			p.Arrival.Kind = ArrivalAll
		case ArrivalAll:
		case ArrivalRamp:
			if p.Arrival.Over <= 0 {
				return s.fail(root, path+".arrival.over", []any{"populations", i, "arrival"}, "a ramp needs a positive duration")
			}
		case ArrivalPoisson:
			if !(p.Arrival.Rate > 0) {
				return s.fail(root, path+".arrival.rate", []any{"populations", i, "arrival"}, "poisson arrival needs a rate above 0 (clients per second)")
			}
		default:
			return s.fail(root, path+".arrival.kind", []any{"populations", i, "arrival", "kind"},
				fmt.Sprintf("%q is not an arrival kind (all, ramp or poisson)", p.Arrival.Kind))
		}
		if err := checkBehaviour(s, root, i); err != nil {
			return err
		}
	}
	s.thresholds = s.thresholds[:0]
	for i, text := range s.Thresholds {
		th, err := ParseThreshold(text)
		if err != nil {
			return s.fail(root, fmt.Sprintf("thresholds[%d]", i), []any{"thresholds", i}, err.Error())
		}
		if !popNames[th.Population] && th.Population != "all" {
			return s.fail(root, fmt.Sprintf("thresholds[%d]", i), []any{"thresholds", i},
				fmt.Sprintf("no population named %q (have %s, or all)%s", th.Population, strings.Join(popList, ", "), didYouMean(th.Population, append(slices.Sorted(maps.Keys(popNames)), "all"))))
		}
		if msg := s.unmeasured(th); msg != "" {
			return s.fail(root, fmt.Sprintf("thresholds[%d]", i), []any{"thresholds", i}, msg)
		}
		if msg := s.rawRate(th); msg != "" {
			return s.fail(root, fmt.Sprintf("thresholds[%d]", i), []any{"thresholds", i}, msg)
		}
		if err := th.decidable(); err != nil {
			return s.fail(root, fmt.Sprintf("thresholds[%d]", i), []any{"thresholds", i}, err.Error())
		}
		s.thresholds = append(s.thresholds, th)
	}
	return nil
}

// rawRate says why threshold th, a share (drop_rate, limited_rate) over
// every kind of message, has no value: a population it covers writes raw
// bytes (behave.WritesRaw), and a results file gives such a population
// no drop rate (see reports.RawKind). It returns "" when th has a value.
func (s *Scenario) rawRate(th Threshold) string {
	if !fractionMetrics[th.Metric] || th.Kind != "" {
		return ""
	}
	var raw []string
	for _, p := range s.Population {
		if (th.Population == "all" || p.Name == th.Population) && behave.WritesRaw(p.behaviour) {
			raw = append(raw, fmt.Sprintf("%q (%s)", p.Name, p.Behaviour))
		}
	}
	if len(raw) == 0 {
		return ""
	}
	what := "population " + raw[0] + " writes"
	if len(raw) > 1 {
		what = "populations " + strings.Join(raw, ", ") + " write"
	}
	// No kind is suggested by name: which kinds a behaviour sends depends
	// on its parameters (a slowloris that only dials sends none).
	return fmt.Sprintf("%s has no value: %s raw bytes, %s; name a kind of message sent (%s.<kind>.%s, such as hello for a population that logs in), or use dropped, drops.<reason> or admitted_per_s",
		th.Metric, what, rawNoRate, th.Population, th.Metric)
}

// unmeasured says why threshold th can never have a value, whatever the
// run: a response time of a kind sent as input (no reply), a kind no
// population it covers sends, a client metric of the wrong role. It
// returns "" when th may have one. Evaluate gives such a threshold no
// value and fails it at every run.
func (s *Scenario) unmeasured(th Threshold) string {
	var pops []*Population
	for i := range s.Population {
		if th.Population == "all" || s.Population[i].Name == th.Population {
			pops = append(pops, &s.Population[i])
		}
	}
	who := fmt.Sprintf("population %q", th.Population)
	if th.Population == "all" {
		who = "no population"
	}
	switch th.Metric {
	case "false_disconnects", "lockouts":
		if !slices.ContainsFunc(pops, func(p *Population) bool { return !*p.Hostile }) {
			return fmt.Sprintf("%s has no value: it counts honest clients, and %s is hostile; use cutoff_p50 or cutoff_max for a hostile population",
				th.Metric, strings.Replace(who, "no population", "every population", 1))
		}
	case "cutoff_p50", "cutoff_max":
		if !slices.ContainsFunc(pops, func(p *Population) bool { return *p.Hostile }) {
			return fmt.Sprintf("%s has no value: it times hostile clients being cut off, and %s is honest; use false_disconnects or lockouts for an honest population",
				th.Metric, strings.Replace(who, "no population", "every population", 1))
		}
	}
	if th.Kind == "" {
		return ""
	}
	k, err := behave.ParseKind(th.Kind)
	if err != nil {
		return ""
	}
	if (k == behave.KindMove || k == behave.KindAbility) && latencyMetrics[th.Metric] {
		return fmt.Sprintf("%s has no value for %s: it is sent as input, which gets no reply, so it has no response time; use send_lag_p99, or a kind sent as a request (chat, purchase)", th.Metric, k)
	}
	switch {
	case k == behave.KindRaw:
		if !slices.ContainsFunc(pops, func(p *Population) bool { return behave.WritesRaw(p.behaviour) }) {
			return fmt.Sprintf("%s, so there is no raw row (only bad-length, malformed and slowloris write them)", noneSent(who, pops, "writes", "raw bytes"))
		}
	case behave.DefaultChannels[k] >= 0 || k == behave.KindPing:
		sends := func(p *Population) bool {
			kinds, ok := behave.Sends(p.behaviour)
			return !ok || slices.Contains(kinds, k)
		}
		if !slices.ContainsFunc(pops, sends) {
			return fmt.Sprintf("%s, so %s.%s has no value", noneSent(who, pops, "sends", k.String()), k, th.Metric)
		}
	}
	return ""
}

// noneSent says that the populations a threshold covers (who, as
// unmeasured words it) do not send what: "no population sends chat", or
// "population "x" (honest) sends no chat".
func noneSent(who string, pops []*Population, verb, what string) string {
	if who == "no population" {
		return fmt.Sprintf("no population %s %s", verb, what)
	}
	return fmt.Sprintf("%s (%s) %s no %s", who, pops[0].Behaviour, verb, what)
}

// latencyMetrics are the response-time metrics, which only a kind that
// gets a reply has.
var latencyMetrics = map[string]bool{"p50": true, "p90": true, "p99": true, "p999": true, "max": true}

// ThresholdList returns the parsed thresholds in file order.
func (s *Scenario) ThresholdList() []Threshold { return append([]Threshold(nil), s.thresholds...) }

// validDriver reports whether d names a driver.
func validDriver(d string) bool { return d == DriverSim || d == DriverLoopback }

// notADriver is the one wording of a driver that is not one.
func notADriver(d string) string { return fmt.Sprintf("%q is not a driver (sim or loopback)", d) }

// isNull reports whether n is YAML's null (written null, ~ or nothing).
func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }
