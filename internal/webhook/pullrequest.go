package webhook

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/preview"
)

// pullRequest is the part of a pull-request (GitHub, Gitea, Forgejo) or merge-request
// (GitLab) payload a preview needs.
type pullRequest struct {
	Action string `json:"action"`
	Number int    `json:"number"`
	PR     struct {
		Number  int    `json:"number"`
		Title   string `json:"title"`
		HTMLURL string `json:"html_url"`
		Head    struct {
			SHA  string  `json:"sha"`
			Repo *prRepo `json:"repo"`
		} `json:"head"`
		Base struct {
			Ref  string  `json:"ref"`
			Repo *prRepo `json:"repo"`
		} `json:"base"`
	} `json:"pull_request"`
	Repository *prRepo `json:"repository"`
	// GitLab's Merge Request Hook.
	ObjectKind string `json:"object_kind"`
	Attrs      struct {
		IID          int    `json:"iid"`
		Action       string `json:"action"`
		Title        string `json:"title"`
		URL          string `json:"url"`
		TargetBranch string `json:"target_branch"`
		// The projects of the head and of the base: a fork's merge request has two.
		SourceProjectID int64 `json:"source_project_id"`
		TargetProjectID int64 `json:"target_project_id"`
		LastCommit      struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"object_attributes"`
}

// prRepo is a repository as GitHub and Gitea describe one in a pull request.
type prRepo struct {
	ID       int64  `json:"id"`
	FullName string `json:"full_name"`
}

// fromFork reports whether a pull request's head is in another repository than its base.
// Not knowing counts as a fork: the head repository is null when the fork was deleted, and
// a payload without the fields is treated as the least trusted kind. GitHub's
// head.repo.fork is not used: it is true for every pull request of a repository that is
// itself a fork.
func fromFork(head, base *prRepo) bool {
	switch {
	case head == nil || base == nil:
		return true
	case head.ID != 0 && base.ID != 0:
		return head.ID != base.ID
	case head.FullName != "" && base.FullName != "":
		return !strings.EqualFold(head.FullName, base.FullName)
	}
	return true
}

// previewActions are the actions that put a new head up for review; the others (closed,
// labeled, edited, approved, …) are acknowledged and ignored.
var previewActions = map[string]map[string]bool{
	providerGitHub:  {"opened": true, "synchronize": true, "reopened": true},
	providerGitea:   {"opened": true, "synchronize": true, "synchronized": true, "reopened": true},
	providerForgejo: {"opened": true, "synchronize": true, "synchronized": true, "reopened": true},
	providerGitLab:  {"open": true, "update": true, "reopen": true},
}

// parsePullRequest reads a pull-request event; ok is false for an action that asks for no
// preview.
func parsePullRequest(h http.Header, body []byte, provider string) (ev preview.Event, ok bool, err error) {
	if mt, _, _ := mime.ParseMediaType(h.Get("Content-Type")); mt == "application/x-www-form-urlencoded" {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return ev, false, errors.New("invalid form-encoded pull request payload")
		}
		body = []byte(form.Get("payload"))
	}
	var p pullRequest
	if err := json.Unmarshal(body, &p); err != nil {
		return ev, false, errors.New("invalid JSON pull request payload")
	}
	action := p.Action
	ev.Provider = preview.ProviderGitHub
	switch provider {
	case providerGitLab:
		action = p.Attrs.Action
		ev.Provider = preview.ProviderGitLab
		ev.Number, ev.HeadSHA, ev.Title, ev.URL, ev.Base = p.Attrs.IID, p.Attrs.LastCommit.ID, p.Attrs.Title, p.Attrs.URL, p.Attrs.TargetBranch
		ev.Fork = p.Attrs.SourceProjectID == 0 || p.Attrs.SourceProjectID != p.Attrs.TargetProjectID
	default:
		if provider == providerGitea || provider == providerForgejo {
			ev.Provider = preview.ProviderGitea
		}
		ev.Number, ev.HeadSHA, ev.Title, ev.URL, ev.Base = firstNumber(p.PR.Number, p.Number), p.PR.Head.SHA, p.PR.Title, p.PR.HTMLURL, p.PR.Base.Ref
		base := p.PR.Base.Repo
		if base == nil {
			base = p.Repository
		}
		ev.Fork = fromFork(p.PR.Head.Repo, base)
	}
	if !previewActions[provider][action] {
		return ev, false, nil
	}
	if ev.Number <= 0 {
		return ev, false, errors.New("pull request payload names no pull request number")
	}
	ev.HeadSHA = strings.ToLower(ev.HeadSHA)
	if len(ev.HeadSHA) != 40 && len(ev.HeadSHA) != 64 || strings.Trim(ev.HeadSHA, "0123456789abcdef") != "" {
		return ev, false, errors.New("pull request payload names no head commit")
	}
	ev.Title, ev.Base = clip.Storable(ev.Title, 256), clip.Storable(strings.TrimPrefix(ev.Base, "refs/heads/"), 256)
	if len(ev.URL) > 2048 || !utf8.ValidString(ev.URL) || strings.ContainsAny(ev.URL, "\x00\r\n") ||
		!(strings.HasPrefix(ev.URL, "https://") || strings.HasPrefix(ev.URL, "http://")) {
		ev.URL = ""
	}
	return ev, true, nil
}

// targets reports whether a pull request to base would change what a source tracking branch
// applies: any when the source tracks no branch (a tag, a commit, a folder), else one to that
// branch. A pull request to another branch is not previewed, as a push to it does not sync.
func targets(base, branch string) bool {
	return branch == "" || base == branch
}

func firstNumber(ns ...int) int {
	for _, n := range ns {
		if n > 0 {
			return n
		}
	}
	return 0
}
