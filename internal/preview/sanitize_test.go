package preview

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trueup-dev/trueup/internal/redact"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	tmp := filepath.ToSlash(os.TempDir())
	slashSecret := tmp + "/9j4AAQSkZJRg+b64secret"              // a base64 secret may start with / and a folder's name
	dsn := "postgres://app:prod-S3cret-pw@db.internal:5432/app" // a controller secret quoting a value
	secret := redact.New("tok-controller-secret", "/9j/4AAQSkZJRgABAQ", slashSecret, dsn)
	pem := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEF\nAASCBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n"
	values := []string{"prod-S3cret-pw", `quo"ted-value`, "eu", "5432", pem}
	roots := []string{"/etc/trueup", "/srv/trueup data", "/var/lib/trueup"}
	for _, tc := range []struct{ name, in, want string }{
		{"value as written", "password is prod-S3cret-pw.", "password is ***."},
		{"value JSON-escaped", `{"v":"quo\"ted-value"}`, `{"v":"***"}`},
		{"number", "port 5432 open", "port *** open"},
		{"short value kept", "region eu-west", "region eu-west"},
		{"controller secret", "token tok-controller-secret", "token ***"},
		{"controller secret quoting a value", "connect " + dsn + ": refused", "connect ***: refused"},
		{"controller secret quoting a value, query-escaped", "dsn=" + url.QueryEscape(dsn), "dsn=***"},
		{"terraform snippet",
			"Error: Invalid value for input variable\n\n  on /tmp/trueup-terraform-0/tf/default.Db.a/call-1/spec.tfvars.json line 1:\n   1: {\"size\":\"x\"}\n\nThe given value is not suitable for var.size declared at main.tf:2,1-16: a\nnumber is required.",
			"Error: Invalid value for input variable\n\n\nThe given value is not suitable for var.size declared at main.tf:2,1-16: a\nnumber is required."},
		{"validation snippet in a box",
			"│ Error: Invalid value for variable\n│ \n│   on main.tf line 3, in variable \"size\":\n│    3:   validation {\n│     ├────────────────\n│     │ var.size is \"abc\"\n│ \n│ too big",
			"│ Error: Invalid value for variable\n│ \n│ \n│ too big"},
		{"absolute paths cut", `found in file "` + tmp + `/tfx/call/spec.tfvars.json"; open /etc/trueup/x.key: denied`,
			`found in file "…/spec.tfvars.json"; open …/x.key: denied`},
		{"multi-line value printed line by line", "  + key = <<-EOT\n        MIIEvQIBADANBgkqhkiG9w0BAQEF\n        AASCBKcwggSjAgEAAoIBAQC7\n    EOT",
			"  + key = <<-EOT\n        ***\n        ***\n    EOT"},
		{"multi-line value whole", `{"pem":"` + strings.ReplaceAll(pem, "\n", `\n`) + `"}`, `{"pem":"***"}`},
		{"secret starting with /", "blob /9j/4AAQSkZJRgABAQ end", "blob *** end"},
		{"secret starting with a root", "blob " + slashSecret + " end", "blob *** end"},
		{"path after a colon", "PATH=/usr/bin:/var/lib/trueup/git/infra/bin", "PATH=/usr/bin:…/bin"},
		{"a root itself", "cd /etc/trueup: denied", "cd …: denied"},
		{"a root with a space", "open /srv/trueup data/x.json", "open …/x.json"},
		{"http paths and other folders kept", "PUT /v1/queues/orders 404; see /usr/share/doc/x and /etc/trueupx/a",
			"PUT /v1/queues/orders 404; see /usr/share/doc/x and /etc/trueupx/a"},
		{"urls and relative paths kept", "see https://example.com/a/b and file:///x/y and dir/a/b and main.tf:2",
			"see https://example.com/a/b and file:///x/y and dir/a/b and main.tf:2"},
		{"text without line words", "on the line", "on the line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sanitize(tc.in, values, secret, roots); got != tc.want {
				t.Errorf("sanitize(%q)\n = %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}
