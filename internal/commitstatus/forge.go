package commitstatus

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/forge/githubapi"
	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
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

// forge posts the statuses of one provider through its client package (githubapi for
// GitHub and Gitea, gitlabapi for GitLab).
type forge interface {
	// post sends one status. The error, scrubbed, names the answer's status; retry says
	// whether another attempt may succeed, wait how long the forge asks to wait before it.
	post(ctx context.Context, sha string, s state, desc string) (retry bool, wait time.Duration, err error)
	// key identifies what a forge would consider the same status again.
	key(s state, desc string) string
	// scrub removes the token from an error, whatever echoed it.
	scrub(err error) error
	// withTarget is the forge with another link beside its statuses.
	withTarget(targetURL string) forge
}

func newForge(cfg Config, statusContext string) (forge, error) {
	c := common{token: cfg.Token, context: statusContext, targetURL: cfg.TargetURL}
	if cfg.Provider == ProviderGitLab {
		base := cfg.BaseURL
		if base == "" {
			base = "https://gitlab.com/"
		}
		api, err := gitlabapi.New(gitlabapi.Config{BaseURL: base, Token: cfg.Token, Pauses: cfg.Pauses})
		if err != nil {
			return nil, fmt.Errorf("commit status: %w", err)
		}
		return gitlab{c, url.PathEscape(cfg.Repo), api}, nil
	}
	u, err := githubapi.ParseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("commit status: %w", err)
	}
	api, _ := githubapi.NewClient(githubapi.ClientConfig{BaseURL: u, Tokens: githubapi.StaticToken(cfg.Token), Pauses: cfg.Pauses,
		Client: &http.Client{Timeout: requestTimeout}})
	owner, repo, _ := strings.Cut(cfg.Repo, "/")
	return github{c, owner, repo, api}, nil
}

type common struct {
	token, context, targetURL string
}

func (c common) scrub(err error) error {
	if err == nil || c.token == "" || !strings.Contains(err.Error(), c.token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), c.token, "[redacted]"))
}

// retryable reports whether a call that failed with err may succeed when tried again (no
// answer came, a 5xx, a rate limit of either forge), and how long the forge asks to wait.
func retryable(err error) (bool, time.Duration) {
	now := time.Now()
	if until, ok := githubapi.RateLimitUntil(err, now); ok {
		return true, until.Sub(now)
	}
	var rl *gitlabapi.RateLimitError
	if errors.As(err, &rl) {
		return true, rl.Until.Sub(now)
	}
	var ae *gitlabapi.APIError
	if errors.As(err, &ae) {
		return ae.Status >= 500, 0
	}
	if code := githubapi.StatusCode(err); code != 0 {
		return code >= 500, 0
	}
	return true, 0
}

// github posts to the REST API: POST repos/{owner}/{repo}/statuses/{sha}.
type github struct {
	common
	owner, repo string
	api         *gh.Client
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

func (g github) post(ctx context.Context, sha string, s state, desc string) (bool, time.Duration, error) {
	st := &gh.RepoStatus{State: gh.String(g.state(s)), Description: gh.String(desc), Context: gh.String(g.context)}
	if g.targetURL != "" {
		st.TargetURL = gh.String(g.targetURL)
	}
	// Sent by hand rather than through Repositories.CreateStatus, which decodes the answer:
	// any 2xx is a status posted, whatever its body (some Gitea versions answer with none
	// that is JSON).
	req, err := g.api.NewRequest(http.MethodPost, "repos/"+url.PathEscape(g.owner)+"/"+url.PathEscape(g.repo)+"/statuses/"+url.PathEscape(sha), st)
	if err != nil {
		return false, 0, g.scrub(err)
	}
	if _, err = g.api.Do(ctx, req, nil); err == nil {
		return false, 0, nil
	}
	retry, wait := retryable(err)
	return retry, wait, g.scrub(describe(err))
}

// describe names the answer of a go-github error by its status and GitHub's message.
func describe(err error) error {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		return err
	}
	if er.Response.StatusCode/100 == 3 {
		return fmt.Errorf("%s: redirects are not followed (is the base URL right?)", er.Response.Status)
	}
	if er.Message == "" {
		return errors.New(er.Response.Status)
	}
	return fmt.Errorf("%s: %s", er.Response.Status, clip.Runes(oneLine(er.Message), 200))
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

func (g gitlab) post(ctx context.Context, sha string, s state, desc string) (bool, time.Duration, error) {
	form := url.Values{"state": {g.state(s)}, "name": {g.context}, "description": {desc}}
	if g.targetURL != "" {
		form.Set("target_url", g.targetURL)
	}
	_, err := g.api.Do(ctx, gitlabapi.Request{Method: http.MethodPost, Path: "projects/" + g.project + "/statuses/" + sha,
		Form: form, Auth: true})
	if err == nil {
		return false, 0, nil
	}
	retry, wait := retryable(err)
	return retry, wait, g.scrub(err)
}
