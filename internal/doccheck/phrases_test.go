package doccheck

import (
	"reflect"
	"testing"
)

func TestForbiddenPhrases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string // the matches, in order
	}{
		{"review labels", "Fixed (H3) and (M12); see (L2).", []string{"(H3)", "(M12)", "(L2)"}},
		{"review finding", "This closes a Review finding.", []string{"Review finding"}},
		{"section sign", "See DESIGN §9.", []string{"§"}},
		{"history words", "It works as before. It used to be slow. This flag is new in v2.", []string{"as before", "used to be", "is new in"}},
		{"more history words", "It no longer needs a token; formerly it did; it is not slow anymore. The flag has been renamed.",
			[]string{"no longer needs", "has been renamed", "formerly", "anymore"}},
		{"present tense is fine", "The key used to sign the token. The newest revision is newer. A renewal.", nil},
		{"legitimate present tense", "Apply it if it is new. Resources no longer in Git are pruned. The previously applied revision stays. Leased at the moment of the answer.", nil},
		{"labels need the parentheses shape", "H3 headings, (H123), (X3), (h3) are fine.", nil},
		{"label lists and brackets", "Fixed (H3, M6) and (L1,L2); see [L2] and [M3, H1].", []string{"(H3, M6)", "(L1,L2)", "[L2]", "[M3, H1]"}},
		{"label with a colon at a word start", "M3: claims are fair. See H12: above.", []string{"M3:", "H12:"}},
		{"colon labels need a word start and one or two digits", "HTML5: a SHA1: b; H123: c; h3: d; XM3: e; localhost:8080 and 10:30", nil},
		{"fenced code skipped", "```\nno longer needs (H3)\n```\nok", nil},
		{"code span skipped", "Run `grep 'as before'` to find it.", nil},
		{"code span across lines skipped", "Run `grep\n'as before'` to find it.", nil},
		{"indented fence in a list item skipped", "1. Run:\n\n    ```\n    no longer (H3)\n    ```\n2. Done", nil},
		{"fence under a list item's text skipped", "- a\n  - b\n\n      ~~~\n      as before\n      ~~~", nil},
		{"line numbers", "ok\n\nformer\nformerly", []string{"formerly"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, p := range ForbiddenPhrases(tt.src) {
				got = append(got, p.Match)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ForbiddenPhrases(%q) = %q, want %q", tt.src, got, tt.want)
			}
		})
	}
	if got := ForbiddenPhrases("a\nb\nused to be"); len(got) != 1 || got[0].Line != 3 {
		t.Errorf("line of the phrase = %+v, want line 3", got)
	}
}
