package refdoc

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metric is one series family as the reference lists it.
type Metric struct {
	Name, Type, Help string
	Labels           []string
}

// Metrics describes every family the collectors register: name, help and labels from their
// descriptions, the type from the collector (a vector) or from what it collects.
func Metrics(cs []prometheus.Collector) ([]Metric, error) {
	var out []Metric
	for _, c := range cs {
		types := collectedTypes(c)
		for _, d := range describe(c) {
			m, err := ParseDesc(d.String())
			if err != nil {
				return nil, err
			}
			m.Type = vecType(c)
			if m.Type == "" {
				m.Type = types[d]
			}
			if m.Type == "" && !strings.HasPrefix(m.Name, "trueup_") {
				// The process collector describes series some platforms do not collect
				// (network bytes outside Linux): their type follows the naming convention.
				m.Type = "gauge"
				if strings.HasSuffix(m.Name, "_total") {
					m.Type = "counter"
				}
			}
			if m.Type == "" {
				return nil, fmt.Errorf("%s: no type (the collector sent no sample of it)", m.Name)
			}
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func describe(c prometheus.Collector) []*prometheus.Desc {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	var ds []*prometheus.Desc
	for d := range ch {
		ds = append(ds, d)
	}
	return ds
}

// collectedTypes collects c once and returns the type of each description it sent a valid
// sample of.
func collectedTypes(c prometheus.Collector) map[*prometheus.Desc]string {
	ch := make(chan prometheus.Metric)
	go func() { c.Collect(ch); close(ch) }()
	types := map[*prometheus.Desc]string{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		types[m.Desc()] = sampleType(&pb)
	}
	return types
}

func sampleType(pb *dto.Metric) string {
	switch {
	case pb.Counter != nil:
		return "counter"
	case pb.Gauge != nil:
		return "gauge"
	case pb.Histogram != nil:
		return "histogram"
	case pb.Summary != nil:
		return "summary"
	}
	return "untyped"
}

// vecType is the type of a vector, which collects nothing until it has a child.
func vecType(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	return ""
}

// ParseDesc reads the name, help and labels (variable, then constant ones by name) from
// a description's String form, the only place client_golang shows them:
// Desc{fqName: "x", help: "y", unit: "", constLabels: {a="b"}, variableLabels: {c,d}}
// (unit is optional).
func ParseDesc(s string) (Metric, error) {
	var m Metric
	rest, ok := strings.CutPrefix(s, `Desc{fqName: `)
	if !ok {
		return m, fmt.Errorf("description %q: unknown form", s)
	}
	var err error
	if m.Name, rest, err = quoted(rest); err != nil {
		return m, fmt.Errorf("description %q: %w", s, err)
	}
	if rest, ok = strings.CutPrefix(rest, `, help: `); !ok {
		return m, fmt.Errorf("description %q: no help", s)
	}
	if m.Help, rest, err = quoted(rest); err != nil {
		return m, fmt.Errorf("description %q: %w", s, err)
	}
	if r, ok := strings.CutPrefix(rest, `, unit: `); ok {
		if _, rest, err = quoted(r); err != nil {
			return m, fmt.Errorf("description %q: %w", s, err)
		}
	}
	constLabels, rest, ok := between(rest, `, constLabels: {`, `}`)
	if !ok {
		return m, fmt.Errorf("description %q: no constLabels", s)
	}
	varLabels, _, ok := between(rest, `, variableLabels: {`, `}`)
	if !ok {
		return m, fmt.Errorf("description %q: no variableLabels", s)
	}
	for _, l := range strings.Split(varLabels, ",") {
		if l = strings.TrimSpace(l); l != "" {
			if inner, ok := strings.CutPrefix(l, "c("); ok {
				l = strings.TrimSuffix(inner, ")")
			}
			m.Labels = append(m.Labels, l)
		}
	}
	// A constant label's value (go_info's Go version) describes the build, not the series.
	for _, l := range strings.Split(constLabels, ",") {
		if name, _, _ := strings.Cut(l, "="); strings.TrimSpace(name) != "" {
			m.Labels = append(m.Labels, strings.TrimSpace(name))
		}
	}
	return m, nil
}

func quoted(s string) (value, rest string, err error) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", err
	}
	v, err := strconv.Unquote(q)
	return v, s[len(q):], err
}

func between(s, open, end string) (inner, rest string, ok bool) {
	s, ok = strings.CutPrefix(s, open)
	if !ok {
		return "", "", false
	}
	i := strings.Index(s, end)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(end):], true
}

// MetricsPage renders the metrics reference: trueup's own families first, then those of the
// Go runtime and the process, each sorted by name.
func MetricsPage(regenerate string, ms []Metric) string {
	var b strings.Builder
	b.WriteString(Header(regenerate))
	b.WriteString("# Metrics\n\n")
	b.WriteString("`GET /metrics` serves these series in the Prometheus text format " +
		"to callers with the admin role over every namespace (anyone when `auth:` is not configured). " +
		"Labels are listed in the order the series carry them.\n\n")
	var own, runtime []Metric
	for _, m := range ms {
		if strings.HasPrefix(m.Name, "trueup_") {
			own = append(own, m)
		} else {
			runtime = append(runtime, m)
		}
	}
	table := func(ms []Metric) {
		b.WriteString("| Name | Type | Labels | Description |\n|---|---|---|---|\n")
		for _, m := range ms {
			labels := make([]string, len(m.Labels))
			for i, l := range m.Labels {
				labels[i] = code(l)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", code(m.Name), m.Type, cell(strings.Join(labels, ", ")), cell(m.Help))
		}
		b.WriteString("\n")
	}
	b.WriteString("## trueup\n\n")
	table(own)
	b.WriteString("## Go runtime and process\n\n" +
		"The Prometheus Go client's standard collectors; the process series are those of Linux.\n\n")
	table(runtime)
	return b.String()
}
