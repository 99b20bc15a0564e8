package gitlab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/trueup-dev/trueup/internal/forge/gitlabapi"
)

// pipeline is the part of GitLab's pipeline object trueup reads.
type pipeline struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
	Ref    string `json:"ref"`
	WebURL string `json:"web_url"`
}

// job is the part of GitLab's job object trueup reads.
type job struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	Stage        string `json:"stage"`
	Status       string `json:"status"`
	AllowFailure bool   `json:"allow_failure"`
}

// variable is an entry of a pipeline's variables.
type variable struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// progress is what a pipeline status means to trueup.
type progress int

const (
	inProgress progress = iota
	succeeded
	failed // failed, canceled, skipped: finished without success
)

// classify maps every pipeline status GitLab documents. Statuses added after this was
// written are taken as in progress: polling on is safer than reporting a result.
func classify(status string) (p progress, known bool) {
	switch status {
	case "created", "waiting_for_resource", "preparing", "waiting_for_callback", "pending",
		"running", "scheduled", "manual", "canceling":
		return inProgress, true
	case "success":
		return succeeded, true
	case "failed", "canceled", "skipped":
		return failed, true
	default:
		return inProgress, false
	}
}

// ended reports whether a pipeline has reached a final status.
func ended(status string) bool {
	p, known := classify(status)
	return known && p != inProgress
}

// finished reports whether a superseded pipeline will not run anything more on its own: it
// ended, or it waits on a manual job, which a cancel does not stop (and it runs nothing).
func finished(status string) bool {
	return ended(status) || status == "manual"
}

func (a *Action) pipelinePath(id int64) string {
	return "projects/" + a.project + "/pipelines/" + strconv.FormatInt(id, 10)
}

// trigger starts a pipeline with the trigger token.
func (a *Action) trigger(ctx context.Context, ref string, vars []variable) (pipeline, error) {
	form := url.Values{"token": {a.triggerToken}, "ref": {ref}}
	for _, v := range vars {
		form.Set("variables["+v.Key+"]", v.Value)
	}
	var p pipeline
	_, err := a.gl.GetJSON(ctx, gitlabapi.Request{Method: http.MethodPost, Path: "projects/" + a.project + "/trigger/pipeline", Form: form}, &p)
	return p, err
}

func (a *Action) getPipeline(ctx context.Context, id int64) (pipeline, error) {
	var p pipeline
	_, err := a.gl.GetJSON(ctx, gitlabapi.Request{Method: http.MethodGet, Path: a.pipelinePath(id), Auth: true}, &p)
	return p, err
}

// cancel asks GitLab to cancel a pipeline. GitLab answers 200 whatever the state; the
// pipeline is finished only once a later read says so.
func (a *Action) cancel(ctx context.Context, id int64) (pipeline, error) {
	var p pipeline
	_, err := a.gl.GetJSON(ctx, gitlabapi.Request{Method: http.MethodPost, Path: a.pipelinePath(id) + "/cancel", Auth: true}, &p)
	return p, err
}

func (a *Action) jobs(ctx context.Context, id int64) ([]job, error) {
	var all []job
	err := gitlabapi.EachPage(ctx, a.gl, a.pipelinePath(id)+"/jobs", nil, func(page []job) (bool, error) {
		all = append(all, page...)
		return false, nil
	})
	// Oldest first, as the pipeline ran them; GitLab lists newest first.
	sort.SliceStable(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	return all, err
}

func (a *Action) variables(ctx context.Context, id int64) ([]variable, error) {
	var vars []variable
	_, err := a.gl.GetJSON(ctx, gitlabapi.Request{Method: http.MethodGet, Path: a.pipelinePath(id) + "/variables", Auth: true}, &vars)
	return vars, err
}

// adoptSkew widens the search for a dispatched pipeline, for clocks that disagree.
const adoptSkew = 5 * time.Minute

// findByCorrelation looks among the pipelines triggered on ref since triggeredAt for the one
// whose TRUEUP_ID is correlation.
func (a *Action) findByCorrelation(ctx context.Context, ref, correlation string, triggeredAt time.Time) (*pipeline, error) {
	q := url.Values{
		"ref":           {ref},
		"source":        {"trigger"},
		"updated_after": {triggeredAt.Add(-adoptSkew).UTC().Format(time.RFC3339)},
		"order_by":      {"id"},
		"sort":          {"desc"},
	}
	var found *pipeline
	err := gitlabapi.EachPage(ctx, a.gl, "projects/"+a.project+"/pipelines", q, func(page []pipeline) (bool, error) {
		for _, p := range page {
			vars, err := a.variables(ctx, p.ID)
			if err != nil {
				return false, fmt.Errorf("read variables of pipeline #%d: %w", p.ID, err)
			}
			for _, v := range vars {
				if v.Key == varID && v.Value == correlation {
					found = &p
					return true, nil
				}
			}
		}
		return false, nil
	})
	return found, err
}

// outputsFile is the artifact an outputsJob may publish.
const outputsFile = "trueup-outputs.json"

// artifactOutputs reads outputsFile from a job's artifacts.
func (a *Action) artifactOutputs(ctx context.Context, j job) (map[string]any, error) {
	resp, err := a.gl.Do(ctx, gitlabapi.Request{Method: http.MethodGet,
		Path: "projects/" + a.project + "/jobs/" + strconv.FormatInt(j.ID, 10) + "/artifacts/" + outputsFile, Auth: true})
	if err != nil {
		if gitlabapi.IsStatus(err, http.StatusNotFound) {
			return nil, fmt.Errorf("job %s (#%d) has no artifact %s: %w", j.Name, j.ID, outputsFile, err)
		}
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(resp.Body))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil || out == nil {
		return nil, fmt.Errorf("job %s (#%d): %s is not a JSON object", j.Name, j.ID, outputsFile)
	}
	return out, nil
}
