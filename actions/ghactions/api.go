package ghactions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/internal/plaintext"
)

// Listing bounds.
const (
	perPage = 100
	// maxRunPages bounds the search for a run by correlation id: runs created since the
	// dispatch (minus clock skew) fit in far fewer pages.
	maxRunPages = 10
	// maxJobPages and maxArtifactPages bound what a run's outputs report.
	maxJobPages      = 5
	maxArtifactPages = 5
)

// runDetails is the 200 answer of a dispatch with return_run_details (GitHub since
// 2026-02). go-github v60 predates the field, hence the hand-built request.
type runDetails struct {
	WorkflowRunID int64  `json:"workflow_run_id"`
	RunURL        string `json:"run_url"`
	HTMLURL       string `json:"html_url"`
}

type dispatchRequest struct {
	Ref              string            `json:"ref"`
	Inputs           map[string]string `json:"inputs"`
	ReturnRunDetails bool              `json:"return_run_details,omitempty"`
}

func (a *Action) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

func (a *Action) repoPath() string {
	return "repos/" + url.PathEscape(a.owner) + "/" + url.PathEscape(a.repo)
}

// dispatch starts workflow wf. It returns the run's details when GitHub names the run
// (200), nil when it answers 204 (older GitHub Enterprise). A server that refuses the
// return_run_details parameter (422 naming it) is asked again without it, and never again
// with it: a 422 means nothing was dispatched.
func (a *Action) dispatch(ctx context.Context, wf, ref string, inputs map[string]string) (*runDetails, error) {
	details, err := a.dispatchOnce(ctx, wf, ref, inputs, !a.noRunDetails.Load())
	var er *github.ErrorResponse
	if err != nil && !a.noRunDetails.Load() && errors.As(err, &er) && er.Response != nil &&
		er.Response.StatusCode == http.StatusUnprocessableEntity && strings.Contains(er.Error(), "return_run_details") {
		a.noRunDetails.Store(true)
		a.logger.InfoContext(ctx, "server refuses return_run_details; dispatching without it from now on")
		return a.dispatchOnce(ctx, wf, ref, inputs, false)
	}
	return details, err
}

func (a *Action) dispatchOnce(ctx context.Context, wf, ref string, inputs map[string]string, withDetails bool) (*runDetails, error) {
	u := a.repoPath() + "/actions/workflows/" + url.PathEscape(wf) + "/dispatches"
	req, err := a.gh.NewRequest(http.MethodPost, u, dispatchRequest{Ref: ref, Inputs: inputs, ReturnRunDetails: withDetails})
	if err != nil {
		return nil, err
	}
	cctx, cancel := a.callCtx(ctx)
	defer cancel()
	var d runDetails
	resp, err := a.gh.Do(cctx, req, &d)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNoContent || d.WorkflowRunID == 0 {
		return nil, nil
	}
	return &d, nil
}

// getRun fetches a run. With etag set the request is conditional: notModified reports a
// 304, which costs no rate-limit quota.
func (a *Action) getRun(ctx context.Context, id int64, etag string) (run *github.WorkflowRun, newETag string, notModified bool, err error) {
	req, err := a.gh.NewRequest(http.MethodGet, fmt.Sprintf("%s/actions/runs/%d", a.repoPath(), id), nil)
	if err != nil {
		return nil, "", false, err
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	cctx, cancel := a.callCtx(ctx)
	defer cancel()
	run = new(github.WorkflowRun)
	resp, err := a.gh.Do(cctx, req, run)
	if err != nil {
		// go-github treats every status outside 2xx as an error, 304 included.
		var er *github.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotModified {
			return nil, etag, true, nil
		}
		return nil, "", false, fmt.Errorf("get workflow run %d: %w", id, err)
	}
	return run, resp.Header.Get("ETag"), false, nil
}

// findRun looks for the run whose run-name carries correlation among the workflow's
// dispatch runs created since since. It never guesses "the newest run": other runs of the
// same workflow may start at the same moment. Nil without error: not (yet) there.
func (a *Action) findRun(ctx context.Context, wf, correlation string, since time.Time) (*github.WorkflowRun, error) {
	opts := &github.ListWorkflowRunsOptions{
		Event:       "workflow_dispatch",
		Created:     ">=" + since.UTC().Format(time.RFC3339),
		ListOptions: github.ListOptions{PerPage: perPage},
	}
	for page := 0; page < maxRunPages; page++ {
		cctx, cancel := a.callCtx(ctx)
		runs, resp, err := a.gh.Actions.ListWorkflowRunsByFileName(cctx, a.owner, a.repo, url.PathEscape(wf), opts)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list runs of workflow %s: %w", wf, err)
		}
		for _, r := range runs.WorkflowRuns {
			if strings.Contains(r.GetDisplayTitle(), correlation) || strings.Contains(r.GetName(), correlation) {
				return r, nil
			}
		}
		if resp.NextPage == 0 {
			return nil, nil
		}
		opts.Page = resp.NextPage
	}
	return nil, nil
}

// listJobs lists the latest attempt's jobs of a run.
func (a *Action) listJobs(ctx context.Context, runID int64) ([]*github.WorkflowJob, error) {
	opts := &github.ListWorkflowJobsOptions{Filter: "latest", ListOptions: github.ListOptions{PerPage: perPage}}
	var out []*github.WorkflowJob
	for page := 0; page < maxJobPages; page++ {
		cctx, cancel := a.callCtx(ctx)
		jobs, resp, err := a.gh.Actions.ListWorkflowJobs(cctx, a.owner, a.repo, runID, opts)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list jobs of run %d: %w", runID, err)
		}
		out = append(out, jobs.Jobs...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// listArtifacts lists a run's artifacts.
func (a *Action) listArtifacts(ctx context.Context, runID int64) ([]*github.Artifact, error) {
	opts := &github.ListOptions{PerPage: perPage}
	var out []*github.Artifact
	for page := 0; page < maxArtifactPages; page++ {
		cctx, cancel := a.callCtx(ctx)
		list, resp, err := a.gh.Actions.ListWorkflowRunArtifacts(cctx, a.owner, a.repo, runID, opts)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list artifacts of run %d: %w", runID, err)
		}
		out = append(out, list.Artifacts...)
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// cancelRun cancels a run. GitHub answers 202 (go-github's *AcceptedError), or 409 when the
// run has completed meanwhile; both mean there is nothing left running.
func (a *Action) cancelRun(ctx context.Context, runID int64) error {
	cctx, cancel := a.callCtx(ctx)
	defer cancel()
	_, err := a.gh.Actions.CancelWorkflowRunByID(cctx, a.owner, a.repo, runID)
	var accepted *github.AcceptedError
	var er *github.ErrorResponse
	switch {
	case err == nil, errors.As(err, &accepted):
		return nil
	case errors.As(err, &er) && er.Response != nil &&
		(er.Response.StatusCode == http.StatusConflict || er.Response.StatusCode == http.StatusNotFound):
		return nil
	default:
		return fmt.Errorf("cancel run %d: %w", runID, err)
	}
}

// downloadArtifact fetches an artifact's zip, at most limit bytes. The API answers with a
// 302 to blob storage; that URL is signed and is fetched without the API token.
func (a *Action) downloadArtifact(ctx context.Context, id int64, limit int64) ([]byte, error) {
	req, err := a.gh.NewRequest(http.MethodGet, fmt.Sprintf("%s/actions/artifacts/%d/zip", a.repoPath(), id), nil)
	if err != nil {
		return nil, err
	}
	cctx, cancel := a.callCtx(ctx)
	defer cancel()
	resp, err := a.gh.BareDo(cctx, req)
	var er *github.ErrorResponse
	switch {
	case err == nil:
		// Served directly (no redirect).
		defer resp.Body.Close()
		return readLimited(resp.Body, limit)
	case errors.As(err, &er) && er.Response != nil && isRedirect(er.Response.StatusCode):
		loc, lerr := er.Response.Request.URL.Parse(er.Response.Header.Get("Location"))
		if lerr != nil || er.Response.Header.Get("Location") == "" {
			return nil, fmt.Errorf("download artifact %d: redirect without a valid Location", id)
		}
		// The API's own redirect, followed by hand: the same rule as the blob client's.
		if err := plaintext.Redirect(plaintext.Hop{Origin: er.Response.Request.URL, From: er.Response.Request.URL, To: loc,
			Insecure: a.insecure, Count: 1}); err != nil {
			return nil, fmt.Errorf("download artifact %d: %w", id, err)
		}
		return a.fetchBlob(cctx, loc, limit)
	default:
		return nil, fmt.Errorf("download artifact %d: %w", id, err)
	}
}

func (a *Action) fetchBlob(ctx context.Context, u *url.URL, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := a.blob.Do(req)
	if err != nil {
		// The signed URL is a credential of its own: name the host only.
		return nil, fmt.Errorf("download artifact from %s: %w", u.Host, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download artifact from %s: %s", u.Host, resp.Status)
	}
	return readLimited(resp.Body, limit)
}

// errTooLarge reports an artifact or outputs file over its bound.
var errTooLarge = errors.New("too large")

func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
	}
	return b, nil
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// unwrapURLError drops the *url.Error wrapper, whose message would quote the signed URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
