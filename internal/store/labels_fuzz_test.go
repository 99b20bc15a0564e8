package store

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseLabelSelector parses arbitrary selectors (they come from API query strings). It
// must not panic; an accepted selector has valid keys, known operators and the values each
// operator needs, turns into SQL, and, when its values are plain, prints back to a selector
// that parses to the same requirements.
var labelKeyRe = regexp.MustCompile(`^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

func FuzzParseLabelSelector(f *testing.F) {
	for _, s := range []string{
		"team=payments",
		"a=b,c!=d,e,!f,g in (x,y),h notin (z)",
		"env in(prod,staging)",
		"example.com/tier==1",
		"app.kubernetes.io/name notin ( web , api )",
		"a in (b, c), d",
		"a in b",
		"=b",
		"a,,b",
		"(a,b)",
		"a in (x)(y)",
		"k in ()",
		"!",
		"x\tin\t(y)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sel string) {
		reqs, err := ParseLabelSelector(sel)
		if err != nil {
			if reqs != nil {
				t.Fatalf("requirements %v returned with error %v", reqs, err)
			}
			return
		}
		if len(reqs) == 0 {
			t.Fatalf("%q accepted with no requirements", sel)
		}
		plain := true
		for _, r := range reqs {
			if !labelKeyRe.MatchString(r.Key) { // the same pattern as labelsel's
				t.Fatalf("%q: invalid key %q accepted", sel, r.Key)
			}
			switch r.Op {
			case "=", "!=":
				if len(r.Values) != 1 {
					t.Fatalf("%q: %s with %d values", sel, r.Op, len(r.Values))
				}
			case "in", "notin":
				if len(r.Values) == 0 {
					t.Fatalf("%q: %s with no values", sel, r.Op)
				}
			case "exists", "!exists":
				if len(r.Values) != 0 {
					t.Fatalf("%q: %s with values %q", sel, r.Op, r.Values)
				}
			default:
				t.Fatalf("%q: unknown operator %q", sel, r.Op)
			}
			n := 0
			_ = requirementSQL(r, func(any) string { n++; return "$" + strconv.Itoa(n) })
			for _, v := range r.Values {
				if strings.ContainsAny(v, ",()=! \t\n\v\f\r\u0085\u00a0") {
					plain = false
				}
			}
		}
		if !plain {
			return
		}
		again, err := ParseLabelSelector(formatSelector(reqs))
		if err != nil || !reflect.DeepEqual(again, reqs) {
			t.Fatalf("%q parsed to %+v, printed as %q, which parses to %+v (%v)", sel, reqs, formatSelector(reqs), again, err)
		}
	})
}

// formatSelector prints requirements in the selector syntax, the inverse of
// ParseLabelSelector for plain values.
func formatSelector(reqs []LabelRequirement) string {
	terms := make([]string, len(reqs))
	for i, r := range reqs {
		switch r.Op {
		case "=", "!=":
			terms[i] = r.Key + r.Op + r.Values[0]
		case "exists":
			terms[i] = r.Key
		case "!exists":
			terms[i] = "!" + r.Key
		default:
			terms[i] = r.Key + " " + r.Op + " (" + strings.Join(r.Values, ",") + ")"
		}
	}
	return strings.Join(terms, ",")
}
