package store

import (
	"fmt"
	"regexp"
	"strings"
)

// LabelRequirement is one term of a Kubernetes-style label selector.
type LabelRequirement struct {
	Key    string
	Op     string // "=", "!=", "exists", "!exists", "in", "notin"
	Values []string
}

var labelKeyRe = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// setTermRe matches "key in (a,b)" and "key notin (a)", with or without a space before the
// parenthesis as kubectl accepts: the operator follows white space and is followed by white
// space, "(" or nothing (then the missing values are an error).
var setTermRe = regexp.MustCompile(`^(.*?)\s+(in|notin)(\s.*|\(.*)?$`)

// ParseLabelSelector parses "a=b,c!=d,e,!f,g in (x,y),h notin (z)".
func ParseLabelSelector(sel string) ([]LabelRequirement, error) {
	var terms []string
	depth, start := 0, 0
	for i, c := range sel {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				terms = append(terms, sel[start:i])
				start = i + 1
			}
		}
	}
	terms = append(terms, sel[start:])
	var out []LabelRequirement
	for _, t := range terms {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil, fmt.Errorf("empty term in %q", sel)
		}
		var r LabelRequirement
		switch {
		case setTermRe.MatchString(t):
			m := setTermRe.FindStringSubmatch(t)
			k, op, rest := m[1], m[2], strings.TrimSpace(m[3])
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return nil, fmt.Errorf("%q: values must be in parentheses", t)
			}
			r = LabelRequirement{Key: strings.TrimSpace(k), Op: op}
			for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
				r.Values = append(r.Values, strings.TrimSpace(v))
			}
		case strings.Contains(t, "!="):
			k, v, _ := strings.Cut(t, "!=")
			r = LabelRequirement{Key: strings.TrimSpace(k), Op: "!=", Values: []string{strings.TrimSpace(v)}}
		case strings.Contains(t, "="):
			k, v, _ := strings.Cut(t, "=")
			v = strings.TrimPrefix(v, "=")
			r = LabelRequirement{Key: strings.TrimSpace(k), Op: "=", Values: []string{strings.TrimSpace(v)}}
		case strings.HasPrefix(t, "!"):
			r = LabelRequirement{Key: strings.TrimSpace(t[1:]), Op: "!exists"}
		default:
			r = LabelRequirement{Key: t, Op: "exists"}
		}
		if !labelKeyRe.MatchString(r.Key) {
			return nil, fmt.Errorf("invalid label key %q", r.Key)
		}
		out = append(out, r)
	}
	return out, nil
}

func (r LabelRequirement) sql(arg func(any) string) string {
	switch r.Op {
	case "=":
		return fmt.Sprintf("labels->>%s = %s", arg(r.Key), arg(r.Values[0]))
	case "!=":
		return fmt.Sprintf("(labels->>%s IS DISTINCT FROM %s)", arg(r.Key), arg(r.Values[0]))
	case "exists":
		return fmt.Sprintf("labels ? %s", arg(r.Key))
	case "!exists":
		return fmt.Sprintf("NOT (labels ? %s)", arg(r.Key))
	case "in":
		return fmt.Sprintf("labels->>%s = ANY(%s::text[])", arg(r.Key), arg(r.Values))
	default: // notin
		return fmt.Sprintf("NOT (COALESCE(labels->>%s, '') = ANY(%s::text[]) AND labels ? %s)", arg(r.Key), arg(r.Values), arg(r.Key))
	}
}
