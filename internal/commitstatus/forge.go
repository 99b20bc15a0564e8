package commitstatus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
	"github.com/trueup-dev/trueup/internal/httpwait"
)

// state is trueup's view of a status; each forge spells it its own way.
type state string

const (
	statePending    state = "pending"    // picked up, being applied
	stateRunning    state = "running"    // applied, resources reconciling
	stateSuccess    state = "success"    // every changed resource Ready
	stateFailure    state = "failure"    // rejected, or resources Failed/Stalled
	stateSuperseded state = "superseded" // a newer revision was applied before this one finished
	stateError      state = "error"      // could not be decided (a preview that could not run)
)

// forge builds the status request of one provider.
type forge interface {
	request(ctx context.Context, sha string, s state, desc string) (*http.Request, error)
	// key identifies what a forge would consider the same status again.
	key(s state, desc string) string
	// scrub removes the token from an error, whatever echoed it.
	scrub(err error) error
	// withTarget is the forge with another link beside its statuses.
	withTarget(targetURL string) forge
}

func newForge(cfg Config, statusContext string) (forge, error) {
	base := cfg.BaseURL
	if base == "" {
		base = map[string]string{ProviderGitHub: githubapi.DefaultBaseURL, ProviderGitLab: "https://gitlab.com/"}[cfg.Provider]
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	c := common{base: base, token: cfg.Token, context: statusContext, targetURL: cfg.TargetURL}
	if cfg.Provider == ProviderGitLab {
		api, err := gitlabapi.New(gitlabapi.Config{BaseURL: base, Token: cfg.Token})
		if err != nil {
			return nil, fmt.Errorf("commit status: %w", err)
		}
		return gitlab{c, url.PathEscape(cfg.Repo), api}, nil
	}
	owner, repo, _ := strings.Cut(cfg.Repo, "/")
	return github{c, url.PathEscape(owner) + "/" + url.PathEscape(repo)}, nil
}

type common struct {
	base, token, context, targetURL string
}

func (c common) scrub(err error) error {
	if err == nil || c.token == "" || !strings.Contains(err.Error(), c.token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), c.token, "[redacted]"))
}

// github posts to the REST API: POST repos/{owner}/{repo}/statuses/{sha}.
type github struct {
	common
	repo string // escaped owner/repo
}

func (g github) withTarget(u string) forge { g.targetURL = u; return g }

func (g gitlab) withTarget(u string) forge { g.targetURL = u; return g }

func (g github) state(s state) string {
	switch s {
	case stateRunning:
		return "pending"
	case stateSuperseded:
		return "error" // GitHub has no "cancelled" for statuses
	}
	return string(s)
}

// key: GitHub takes a new description in the same state, so a changed one is worth posting.
func (g github) key(s state, desc string) string { return g.state(s) + "\x00" + desc }

func (g github) request(ctx context.Context, sha string, s state, desc string) (*http.Request, error) {
	body, err := json.Marshal(struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url,omitempty"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}{g.state(s), g.targetURL, desc, g.context})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"repos/"+g.repo+"/statuses/"+sha, bytes.NewReader(body))
	if err != nil {
		return nil, g.scrub(err)
	}
	githubapi.SetHeaders(req, g.token)
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// gitlab posts to POST api/v4/projects/{id}/statuses/{sha}.
type gitlab struct {
	common
	project string // escaped path or id
	api     *gitlabapi.Client
}

func (g gitlab) state(s state) string {
	switch s {
	case stateFailure, stateError:
		return "failed"
	case stateSuperseded:
		return "canceled"
	}
	return string(s)
}

// key: GitLab refuses to move a status to the state it is already in.
func (g gitlab) key(s state, _ string) string { return g.state(s) }

func (g gitlab) request(ctx context.Context, sha string, s state, desc string) (*http.Request, error) {
	form := url.Values{"state": {g.state(s)}, "name": {g.context}, "description": {desc}}
	if g.targetURL != "" {
		form.Set("target_url", g.targetURL)
	}
	req, err := g.api.NewRequest(ctx, gitlabapi.Request{Method: http.MethodPost, Path: "projects/" + g.project + "/statuses/" + sha,
		Form: form, Auth: true})
	if err != nil {
		return nil, g.scrub(err)
	}
	return req, nil
}

// apiMessage returns ": <message>" from an error answer of either API, bounded.
func apiMessage(resp *http.Response) string {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var m struct {
		Message any    `json:"message"` // GitLab sends a string or an object
		Error   string `json:"error"`
	}
	msg := ""
	if json.Unmarshal(raw, &m) == nil {
		switch v := m.Message.(type) {
		case string:
			msg = v
		case nil:
			msg = m.Error
		default:
			b, _ := json.Marshal(v)
			msg = string(b)
		}
	}
	if msg == "" {
		return ""
	}
	return ": " + clip.Runes(oneLine(msg), 200)
}

// retryAfter reads Retry-After (seconds) or GitHub's X-RateLimit-Reset.
func retryAfter(resp *http.Response) time.Duration {
	if d, ok := httpwait.RetryAfter(resp.Header, time.Now()); ok && d > 0 {
		return d
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		if reset, ok := httpwait.ResetAt(resp.Header, "X-RateLimit-Reset"); ok {
			if d := time.Until(reset); d > 0 {
				return d
			}
		}
	}
	return 0
}
