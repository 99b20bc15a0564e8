package config

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"text/template"
	"time"

	"github.com/trueup-dev/trueup/internal/labelsel"
	"github.com/trueup-dev/trueup/internal/notify"
	"github.com/trueup-dev/trueup/internal/plaintext"
)

// Notifications says who hears about failures, recoveries and rejected revisions, and how.
// Each message is tried again after a provider error, up to maxAttempts.
type Notifications struct {
	// Providers are where messages go.
	Providers []NotifyProvider `yaml:"providers"`
	// Rules select the events each provider is told about.
	Rules []NotifyRule `yaml:"rules"`
	// MaxAttempts is how many times one notification is tried before it is dead (default 5).
	MaxAttempts int `yaml:"maxAttempts"`
	// GroupWindow: events of one rule, event and revision that arrive within it go out as one
	// message (default 5s; negative turns grouping off).
	GroupWindow time.Duration `yaml:"groupWindow"`
	// RateLimit: at most one message per resource and event (for ApprovalRequired, and
	// plan) per this interval; the rest are counted into the next one (default 1m; negative
	// turns it off).
	RateLimit time.Duration `yaml:"rateLimit"`
}

// NotifyProvider is one destination.
type NotifyProvider struct {
	// Name is how rules name the provider; unique.
	Name string `yaml:"name"`
	Type string `yaml:"type"` // one of slack, msteams, webhook, email
	// URL is the slack or msteams incoming webhook, or the webhook provider's endpoint (a
	// credential: normally a ${VAR}).
	URL string `yaml:"url"`
	// Secret signs webhook bodies (X-Trueup-Signature-256, as the http action).
	Secret string   `yaml:"secret"`
	SMTP   *SMTP    `yaml:"smtp"` // the email provider's server
	From   string   `yaml:"from"` // email: the sender address
	To     []string `yaml:"to"`   // email: the recipients (at least one)
	// Timeout bounds one delivery (default 10s).
	Timeout time.Duration `yaml:"timeout"`
	// Insecure allows an http:// slack or msteams URL to another machine (the URL is the
	// credential).
	Insecure bool `yaml:"insecure"`
}

// SMTP is an email provider's server; STARTTLS is required unless insecure is set (tests).
type SMTP struct {
	Host     string `yaml:"host"`     // required
	Port     int    `yaml:"port"`     // the server's port
	Username string `yaml:"username"` // for SMTP authentication
	Password string `yaml:"password"` // normally a ${VAR}
	Insecure bool   `yaml:"insecure"` // allows a server without STARTTLS
}

// NotifyRule sends the events it selects to its providers. Empty selectors match all.
type NotifyRule struct {
	Name      string   `yaml:"name"`      // unique
	Providers []string `yaml:"providers"` // the providers' names (at least one)
	// Events: Failed, Stalled, Recovered, Deleted, Abandoned, Drifted, SourceRejected,
	// PruneSkipped, ApprovalRequired, Approved, Rejected or PolicyDenied.
	Events     []string `yaml:"events"`
	Sources    []string `yaml:"sources"`    // source names
	Namespaces []string `yaml:"namespaces"` // namespace names
	Kinds      []string `yaml:"kinds"`      // resource kinds
	// Selector is a label selector (k=v, k!=v, k, !k, k in (a,b), k notin (a,b)).
	Selector string `yaml:"selector"`
	// Template is a Go text/template for the message text, over the message's fields
	// (.Title .Event .Resource .Namespace .Kind .Name .Source .Phase .Message .Revision .URL
	// and others).
	Template string `yaml:"template"`
}

func (n *Notifications) applyDefaults() {
	if n.MaxAttempts == 0 {
		n.MaxAttempts = 5
	}
	if n.GroupWindow == 0 {
		n.GroupWindow = 5 * time.Second
	}
	if n.RateLimit == 0 {
		n.RateLimit = time.Minute
	}
	for i := range n.Providers {
		p := &n.Providers[i]
		if p.Timeout == 0 {
			p.Timeout = 10 * time.Second
		}
		if p.SMTP != nil && p.SMTP.Port == 0 {
			p.SMTP.Port = 587
		}
	}
}

func (n *Notifications) validate(bad func(string, ...any)) {
	if n.MaxAttempts < 1 {
		bad("notifications.maxAttempts: %d is below 1", n.MaxAttempts)
	}
	names := map[string]bool{}
	for i, p := range n.Providers {
		at := fmt.Sprintf("notifications.providers[%d]", i)
		switch {
		case p.Name == "":
			bad("%s.name: required", at)
		case names[p.Name]:
			bad("%s.name: provider %q declared twice", at, p.Name)
		}
		names[p.Name] = true
		switch p.Type {
		case "slack", "msteams", "webhook":
			// Not quoted: a webhook URL is a credential.
			if u, err := url.Parse(p.URL); p.URL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				bad("%s.url: required, an http(s) URL", at)
			} else if err := plaintext.Check(at+".url", u.Scheme, u.Hostname(), "the webhook URL (a credential)", p.Type != "webhook", p.Insecure); err != nil {
				bad("%w", err)
			}
			if p.SMTP != nil || p.From != "" || len(p.To) > 0 {
				bad("%s: smtp, from and to are for type email", at)
			}
			if p.Secret != "" && p.Type != "webhook" {
				bad("%s.secret: only webhook bodies are signed", at)
			}
		case "email":
			if p.URL != "" || p.Secret != "" {
				bad("%s: url and secret are not for type email", at)
			}
			if p.SMTP == nil || p.SMTP.Host == "" {
				bad("%s.smtp.host: required", at)
			} else if p.SMTP.Port < 1 || p.SMTP.Port > 65535 {
				bad("%s.smtp.port: %d is outside 1..65535", at, p.SMTP.Port)
			}
			if _, err := mail.ParseAddress(p.From); err != nil {
				bad("%s.from: %q is not an address", at, p.From)
			}
			if len(p.To) == 0 {
				bad("%s.to: at least one address is required", at)
			}
			for j, to := range p.To {
				if _, err := mail.ParseAddress(to); err != nil {
					bad("%s.to[%d]: %q is not an address", at, j, to)
				}
			}
		case "":
			bad("%s.type: required (slack, msteams, webhook or email)", at)
		default:
			bad("%s.type: %q is not one of slack, msteams, webhook, email", at, p.Type)
		}
		if p.Timeout < 0 {
			bad("%s.timeout: %s is negative", at, p.Timeout)
		}
	}
	rules := map[string]bool{}
	for i, r := range n.Rules {
		at := fmt.Sprintf("notifications.rules[%d]", i)
		switch {
		case r.Name == "":
			bad("%s.name: required", at)
		case rules[r.Name]:
			bad("%s.name: rule %q declared twice", at, r.Name)
		}
		rules[r.Name] = true
		if len(r.Providers) == 0 {
			bad("%s.providers: at least one is required", at)
		}
		for j, p := range r.Providers {
			if !names[p] {
				bad("%s.providers[%d]: no provider is named %q", at, j, p)
			}
		}
		for j, e := range r.Events {
			if !notify.Known(e) {
				bad("%s.events[%d]: %q is not one of %v", at, j, e, notify.All)
			}
		}
		if slices.Contains(r.Sources, "") || slices.Contains(r.Namespaces, "") || slices.Contains(r.Kinds, "") {
			bad("%s: sources, namespaces and kinds may not hold an empty name", at)
		}
		if r.Selector != "" {
			if _, err := labelsel.Parse(r.Selector); err != nil {
				bad("%s.selector: %v", at, err)
			}
		}
		if r.Template != "" {
			if _, err := template.New(r.Name).Parse(r.Template); err != nil {
				bad("%s.template: %v", at, err)
			}
		}
	}
}
