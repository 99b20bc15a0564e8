package commitstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
)

// Previewer publishes the pull-request previews of one source (internal/preview): a commit
// status "trueup/<source>/preview" on the pull request's head, and one comment per pull
// request, created once and edited in place after (a GitHub or Gitea issue comment through
// go-github, a GitLab merge-request note). Unlike Reporter it posts synchronously: the
// preview runner calls it from its own goroutine, never a sync's or a request's.
type Previewer struct {
	cfg   Config
	forge forge
	api   *gh.Client // GitHub and Gitea
	owner string
	repo  string
	// retryDelays are the waits between attempts of an idempotent call (a status, an edit)
	// that failed on the network, a 5xx or a 429. A comment's creation is tried once: its
	// answer lost on the way would otherwise leave two comments.
	retryDelays []time.Duration
	// maxWait bounds the wait a rate limit asks for before another attempt.
	maxWait time.Duration
}

// PreviewState is the state of a preview's commit status.
type PreviewState string

// Preview states.
const (
	PreviewPending PreviewState = "pending" // being previewed
	PreviewSuccess PreviewState = "success" // valid
	PreviewFailure PreviewState = "failure" // invalid: the description names the first errors
	PreviewError   PreviewState = "error"   // could not be previewed
)

// Comment size limits of the forges, in characters.
const (
	GitHubCommentLimit = 65536
	GitLabCommentLimit = 1000000
)

// ErrCommentNotFound says the comment to edit is gone (someone deleted it): create another.
var ErrCommentNotFound = errors.New("comment not found")

// NewPreviewer returns the previewer of source's pull requests on the repository cfg names.
func NewPreviewer(cfg Config, source string) (*Previewer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f, err := newForge(cfg, "trueup/"+source+"/preview")
	if err != nil {
		return nil, err
	}
	p := &Previewer{cfg: cfg, forge: f, retryDelays: []time.Duration{time.Second, 4 * time.Second}, maxWait: maxRateLimitWait}
	if g, ok := f.(github); ok {
		p.api, p.owner, p.repo = g.api, g.owner, g.repo
	}
	return p, nil
}

// CommentLimit is the longest comment the forge takes, in characters.
func (p *Previewer) CommentLimit() int {
	if p.cfg.Provider == ProviderGitLab {
		return GitLabCommentLimit
	}
	return GitHubCommentLimit
}

// SetStatus posts the preview's status on sha; desc is cut to the forge's limit. targetURL,
// when set, replaces the configured link (the preview's dashboard page).
func (p *Previewer) SetStatus(ctx context.Context, sha string, st PreviewState, desc, targetURL string) error {
	if !isCommit(sha) {
		return fmt.Errorf("post preview status: %q is not a commit", sha)
	}
	s := map[PreviewState]state{PreviewPending: statePending, PreviewSuccess: stateSuccess, PreviewFailure: stateFailure, PreviewError: stateError}[st]
	f := p.forge
	if targetURL != "" {
		f = f.withTarget(targetURL)
	}
	desc = clip.Runes(oneLine(desc), maxDescription)
	return p.retry(ctx, func(ctx context.Context) (bool, time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		retry, wait, err := f.post(ctx, sha, s, desc)
		if err != nil {
			return retry, wait, fmt.Errorf("post preview status: %w", err)
		}
		return false, 0, nil
	})
}

// retry runs call until it succeeds, fails for good, or the retry delays are spent. Before
// another attempt it waits its retry delay, or as long as the forge asks (a rate limit's
// reset, at most maxWait) when that is longer; a wait ctx would end first is not begun.
func (p *Previewer) retry(ctx context.Context, call func(context.Context) (retry bool, wait time.Duration, err error)) error {
	for attempt := 0; ; attempt++ {
		again, wait, err := call(ctx)
		if err == nil || !again || attempt >= len(p.retryDelays) {
			return err
		}
		delay := max(p.retryDelays[attempt], min(wait, p.maxWait))
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < delay {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// CreateComment adds the preview's comment to pull request number and returns its id and
// its page (empty on GitLab, whose note links are the merge request's page + "#note_<id>").
func (p *Previewer) CreateComment(ctx context.Context, number int, body string) (id, link string, err error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if p.api == nil {
		var note struct {
			ID int64 `json:"id"`
		}
		if err := p.gitlabNote(ctx, http.MethodPost, number, "", body, &note); err != nil {
			return "", "", err
		}
		return strconv.FormatInt(note.ID, 10), "", nil
	}
	c, _, err := p.api.Issues.CreateComment(ctx, p.owner, p.repo, number, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return "", "", p.forge.scrub(fmt.Errorf("create preview comment on #%d: %w", number, err))
	}
	return strconv.FormatInt(c.GetID(), 10), c.GetHTMLURL(), nil
}

// EditComment replaces the body of comment id on pull request number; ErrCommentNotFound
// when it is gone.
func (p *Previewer) EditComment(ctx context.Context, number int, id, body string) (link string, err error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return "", fmt.Errorf("edit preview comment: id %q is not a number", id)
	}
	err = p.retry(ctx, func(ctx context.Context) (bool, time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		if p.api == nil {
			err := p.gitlabNote(ctx, http.MethodPut, number, id, body, nil)
			if err == nil || errors.Is(err, ErrCommentNotFound) {
				return false, 0, err
			}
			retry, wait := retryable(err)
			return retry, wait, err
		}
		c, resp, err := p.api.Issues.EditComment(ctx, p.owner, p.repo, n, &gh.IssueComment{Body: gh.String(body)})
		switch {
		case resp != nil && resp.StatusCode == http.StatusNotFound:
			return false, 0, ErrCommentNotFound
		case err != nil:
			retry, wait := retryable(err)
			return retry, wait, p.forge.scrub(fmt.Errorf("edit preview comment %s on #%d: %w", id, number, err))
		}
		link = c.GetHTMLURL()
		return false, 0, nil
	})
	return link, err
}

// gitlabNote creates (POST) or edits (PUT, id set) a merge-request note.
func (p *Previewer) gitlabNote(ctx context.Context, method string, number int, id, body string, out any) error {
	g := p.forge.(gitlab)
	path := "projects/" + g.project + "/merge_requests/" + strconv.Itoa(number) + "/notes"
	if id != "" {
		path += "/" + url.PathEscape(id)
	}
	resp, err := g.api.Do(ctx, gitlabapi.Request{Method: method, Path: path, Form: url.Values{"body": {body}}, Auth: true})
	switch {
	case gitlabapi.IsStatus(err, http.StatusNotFound) && id != "":
		return ErrCommentNotFound
	case err != nil:
		return g.scrub(fmt.Errorf("%s merge request note on !%d: %w", strings.ToLower(method), number, err))
	case out != nil:
		if err := json.Unmarshal(resp.Body, out); err != nil {
			return fmt.Errorf("read merge request note: %w", err)
		}
	}
	return nil
}
