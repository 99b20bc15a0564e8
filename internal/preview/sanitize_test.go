package preview

import (
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	secret := func(s string) string {
		return strings.ReplaceAll(s, "tok-controller-secret", "***")
	}
	values := []string{"prod-S3cret-pw", `quo"ted-value`, "eu", "5432"}
	for _, tc := range []struct{ name, in, want string }{
		{"value as written", "password is prod-S3cret-pw.", "password is ***."},
		{"value JSON-escaped", `{"v":"quo\"ted-value"}`, `{"v":"***"}`},
		{"number", "port 5432 open", "port *** open"},
		{"short value kept", "region eu-west", "region eu-west"},
		{"controller secret", "token tok-controller-secret", "token ***"},
		{"terraform snippet",
			"Error: Invalid value for input variable\n\n  on /tmp/trueup-terraform-0/tf/default.Db.a/call-1/spec.tfvars.json line 1:\n   1: {\"size\":\"x\"}\n\nThe given value is not suitable for var.size declared at main.tf:2,1-16: a\nnumber is required.",
			"Error: Invalid value for input variable\n\n\nThe given value is not suitable for var.size declared at main.tf:2,1-16: a\nnumber is required."},
		{"validation snippet in a box",
			"│ Error: Invalid value for variable\n│ \n│   on main.tf line 3, in variable \"size\":\n│    3:   validation {\n│     ├────────────────\n│     │ var.size is \"abc\"\n│ \n│ too big",
			"│ Error: Invalid value for variable\n│ \n│ \n│ too big"},
		{"absolute paths cut", `found in file "/tmp/tfx/call/spec.tfvars.json"; open /etc/trueup/x.key: denied`,
			`found in file "…/spec.tfvars.json"; open …/x.key: denied`},
		{"urls and relative paths kept", "see https://example.com/a/b and file:///x/y and dir/a/b and main.tf:2",
			"see https://example.com/a/b and file:///x/y and dir/a/b and main.tf:2"},
		{"text without line words", "on the line", "on the line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sanitize(tc.in, values, secret); got != tc.want {
				t.Errorf("sanitize(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}
