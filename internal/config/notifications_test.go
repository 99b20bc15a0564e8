package config

import (
	"strings"
	"testing"
	"time"
)

func TestNotificationsContract(t *testing.T) {
	t.Parallel()
	yml := `
notifications:
  providers:
    - {name: ops, type: slack, url: "${SLACK_WEBHOOK_URL}"}
    - {name: hook, type: webhook, url: "https://hooks.example.com/trueup", secret: "${HOOK_SECRET}"}
    - {name: mail, type: email, smtp: {host: smtp.example.com, port: 587, username: trueup,
       password: "${SMTP_PASSWORD}"}, from: trueup@example.com, to: [oncall@example.com]}
  rules:
    - {name: prod, providers: [ops, mail], events: [Failed, Stalled, Recovered],
       namespaces: [production], kinds: [DatabaseCluster], selector: "tier=critical"}
`
	c, err := Parse([]byte(yml), "/x", env(map[string]string{
		"SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T/B/x", "HOOK_SECRET": "s3cret", "SMTP_PASSWORD": "mail-pass-1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	n := c.Notifications
	if n == nil || len(n.Providers) != 3 || len(n.Rules) != 1 {
		t.Fatalf("notifications: %+v", n)
	}
	if n.Providers[0].URL != "https://hooks.slack.com/services/T/B/x" || n.Providers[1].Secret != "s3cret" || n.Providers[2].SMTP.Password != "mail-pass-1" {
		t.Errorf("${VAR}s not expanded: %+v", n.Providers)
	}
	if n.MaxAttempts != 5 || n.GroupWindow != 5*time.Second || n.Providers[0].Timeout != 10*time.Second {
		t.Errorf("defaults: %+v", n)
	}
	secrets := strings.Join(c.Secrets(), ",")
	for _, s := range []string{"s3cret", "mail-pass-1", "https://hooks.slack.com/services/T/B/x"} {
		if !strings.Contains(secrets, s) {
			t.Errorf("%q is not among the values to scrub", s)
		}
	}
}

func TestNotificationsErrors(t *testing.T) {
	t.Parallel()
	const ok = "    - {name: ops, type: slack, url: \"https://hooks.example.com/x\"}\n"
	cases := []struct{ name, providers, rules, want string }{
		{"no type", "    - {name: ops, url: \"https://x\"}\n", "", "notifications.providers[0].type: required"},
		{"bad type", "    - {name: ops, type: pager, url: \"https://x\"}\n", "", `notifications.providers[0].type: "pager" is not one of`},
		{"no url", "    - {name: ops, type: slack}\n", "", "notifications.providers[0].url: required"},
		{"slack over http", "    - {name: ops, type: slack, url: \"http://hooks.example.com/x\"}\n", "", "notifications.providers[0].url"},
		{"duplicate", ok + ok, "", `notifications.providers[1].name: provider "ops" declared twice`},
		{"email without host", "    - {name: m, type: email, from: a@b.c, to: [d@e.f]}\n", "", "notifications.providers[0].smtp.host: required"},
		{"email bad to", "    - {name: m, type: email, smtp: {host: h}, from: a@b.c, to: [nope]}\n", "", "notifications.providers[0].to[0]"},
		{"secret on slack", "    - {name: ops, type: slack, url: \"https://x\", secret: s}\n", "", "notifications.providers[0].secret"},
		{"unknown provider field", "    - {name: ops, type: slack, url: \"https://x\", channel: c}\n", "", "field channel not found"},
		{"unknown rule provider", ok, "    - {name: r, providers: [nope]}\n", `notifications.rules[0].providers[0]: no provider is named "nope"`},
		{"no rule providers", ok, "    - {name: r}\n", "notifications.rules[0].providers: at least one"},
		{"bad event", ok, "    - {name: r, providers: [ops], events: [Exploded]}\n", `notifications.rules[0].events[0]: "Exploded"`},
		{"bad selector", ok, "    - {name: r, providers: [ops], selector: \"tier in critical\"}\n", "notifications.rules[0].selector"},
		{"bad template", ok, "    - {name: r, providers: [ops], template: \"{{.Resource\"}\n", "notifications.rules[0].template"},
		{"duplicate rule", ok, "    - {name: r, providers: [ops]}\n    - {name: r, providers: [ops]}\n", `notifications.rules[1].name: rule "r" declared twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			yml := "notifications:\n  providers:\n" + tc.providers
			if tc.rules != "" {
				yml += "  rules:\n" + tc.rules
			}
			_, err := Parse([]byte(yml), "/x", env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNotificationsPlaintext(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		`{name: ops, type: slack, url: "http://127.0.0.1:9/x"}`,
		`{name: ops, type: slack, url: "http://hooks.example.com/x", insecure: true}`,
		`{name: ops, type: webhook, url: "http://hooks.example.com/x"}`,
	} {
		if _, err := Parse([]byte("notifications:\n  providers:\n    - "+p+"\n"), "/x", env(nil)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
