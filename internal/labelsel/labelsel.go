// Package labelsel owns Kubernetes-style label selectors: parsing "a=b,c in (x,y)" and
// matching a set of labels against one. internal/store turns the same requirements into SQL.
package labelsel

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Requirement is one term of a Kubernetes-style label selector.
type Requirement struct {
	Key    string
	Op     string // "=", "!=", "exists", "!exists", "in", "notin"
	Values []string
}

var labelKeyRe = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// setTermRe matches "key in (a,b)" and "key notin (a)", with or without a space before the
// parenthesis as kubectl accepts: the operator follows white space and is followed by white
// space, "(" or nothing (then the missing values are an error).
var setTermRe = regexp.MustCompile(`^(.*?)\s+(in|notin)(\s.*|\(.*)?$`)

// Parse parses "a=b,c!=d,e,!f,g in (x,y),h notin (z)".
func Parse(sel string) ([]Requirement, error) {
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
	var out []Requirement
	for _, t := range terms {
		t = strings.TrimSpace(t)
		if t == "" {
			return nil, fmt.Errorf("empty term in %q", sel)
		}
		var r Requirement
		switch {
		case setTermRe.MatchString(t):
			m := setTermRe.FindStringSubmatch(t)
			k, op, rest := m[1], m[2], strings.TrimSpace(m[3])
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return nil, fmt.Errorf("%q: values must be in parentheses", t)
			}
			r = Requirement{Key: strings.TrimSpace(k), Op: op}
			for _, v := range strings.Split(rest[1:len(rest)-1], ",") {
				r.Values = append(r.Values, strings.TrimSpace(v))
			}
		case strings.Contains(t, "!="):
			k, v, _ := strings.Cut(t, "!=")
			r = Requirement{Key: strings.TrimSpace(k), Op: "!=", Values: []string{strings.TrimSpace(v)}}
		case strings.Contains(t, "="):
			k, v, _ := strings.Cut(t, "=")
			v = strings.TrimPrefix(v, "=")
			r = Requirement{Key: strings.TrimSpace(k), Op: "=", Values: []string{strings.TrimSpace(v)}}
		case strings.HasPrefix(t, "!"):
			r = Requirement{Key: strings.TrimSpace(t[1:]), Op: "!exists"}
		default:
			r = Requirement{Key: t, Op: "exists"}
		}
		if !labelKeyRe.MatchString(r.Key) {
			return nil, fmt.Errorf("invalid label key %q", r.Key)
		}
		out = append(out, r)
	}
	return out, nil
}

// Matches reports whether labels satisfy every requirement (an empty selector matches all).
func Matches(reqs []Requirement, labels map[string]string) bool {
	for _, r := range reqs {
		v, ok := labels[r.Key]
		switch r.Op {
		case "=":
			if !ok || v != r.Values[0] {
				return false
			}
		case "!=":
			if ok && v == r.Values[0] {
				return false
			}
		case "exists":
			if !ok {
				return false
			}
		case "!exists":
			if ok {
				return false
			}
		case "in":
			if !ok || !slices.Contains(r.Values, v) {
				return false
			}
		default: // notin
			if ok && slices.Contains(r.Values, v) {
				return false
			}
		}
	}
	return true
}
