package webhook

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// Provider names, as logged.
const (
	providerGitHub  = "github"
	providerGitea   = "gitea"
	providerForgejo = "forgejo"
	providerGitLab  = "gitlab"
	providerGeneric = "generic"
)

type eventKind int

const (
	kindPush eventKind = iota
	kindPing
	kindPullRequest
	kindOther
)

// delivery is what the headers say of a request.
type delivery struct {
	provider, event, delivery string
	kind                      eventKind
}

// classify reads the provider, the event and the delivery id from the headers. Gitea and
// Forgejo also send X-GitHub-Event, so their own headers are looked at first.
func classify(h http.Header) delivery {
	switch {
	case h.Get("X-Gitlab-Event") != "" || h.Get("X-Gitlab-Token") != "":
		d := delivery{provider: providerGitLab, event: h.Get("X-Gitlab-Event")}
		// Idempotency-Key stays the same across GitLab's retries of one delivery.
		d.delivery = firstOf(h.Get("Idempotency-Key"), h.Get("X-Gitlab-Event-UUID"))
		switch d.event {
		case "Push Hook", "Tag Push Hook", "":
			d.kind = kindPush
		case "Merge Request Hook":
			d.kind = kindPullRequest
		default:
			d.kind = kindOther
		}
		return d
	case h.Get("X-Forgejo-Event") != "":
		return forgeDelivery(providerForgejo, h.Get("X-Forgejo-Event"), h.Get("X-Forgejo-Delivery"))
	case h.Get("X-Gitea-Event") != "":
		return forgeDelivery(providerGitea, h.Get("X-Gitea-Event"), h.Get("X-Gitea-Delivery"))
	case h.Get("X-GitHub-Event") != "":
		return forgeDelivery(providerGitHub, h.Get("X-GitHub-Event"), h.Get("X-GitHub-Delivery"))
	default:
		return delivery{provider: providerGeneric, delivery: h.Get("X-Request-Id"), kind: kindPush}
	}
}

func forgeDelivery(provider, event, id string) delivery {
	d := delivery{provider: provider, event: event, delivery: id, kind: kindOther}
	switch event {
	case "push":
		d.kind = kindPush
	case "ping":
		d.kind = kindPing
	case "pull_request":
		d.kind = kindPullRequest
	}
	return d
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// push is the part of a push payload trueup reads; GitHub, Gitea, Forgejo and GitLab agree
// on these names.
type push struct {
	Ref         string `json:"ref"`
	After       string `json:"after"`
	CheckoutSHA string `json:"checkout_sha"` // GitLab; null on a branch deletion
}

// parsePush decodes the payload. A generic sender need not send one: then any push counts.
func parsePush(h http.Header, body []byte, provider string) (push, error) {
	var p push
	if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mt == "application/x-www-form-urlencoded" {
		// GitHub's "application/x-www-form-urlencoded" content type: the JSON is in payload=.
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return p, errors.New("invalid form-encoded push payload")
		}
		body = []byte(form.Get("payload"))
	}
	if err := json.Unmarshal(body, &p); err != nil {
		if provider == providerGeneric {
			return push{}, nil
		}
		return p, errors.New("invalid JSON push payload")
	}
	return p, nil
}

// tracked reports whether the push concerns the source: any push when it tracks no branch,
// else a push to that branch (a tag push does not move a branch).
func (p push) tracked(branch string) bool {
	if branch == "" || p.Ref == "" {
		return true
	}
	return p.Ref == "refs/heads/"+branch || p.Ref == branch
}

// commit is the pushed commit, or "" when the payload names none (or a deletion's zeros).
func (p push) commit() string {
	c := firstOf(p.CheckoutSHA, p.After)
	if len(c) < 7 || len(c) > 64 || strings.Trim(c, "0") == "" {
		return ""
	}
	for _, r := range c {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return ""
		}
	}
	return strings.ToLower(c)
}
