package ghactions

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/google/go-github/v60/github"

	"github.com/trueup-dev/trueup/actions"
)

// Outputs published by a workflow.
const (
	// outputsArtifact is the artifact whose single JSON file is merged into the outputs.
	outputsArtifact = "trueup-outputs"
	// outputsFile is preferred when the artifact holds several files.
	outputsFile = "outputs.json"
	// maxOutputsBytes bounds both the artifact's zip and the JSON file inside.
	maxOutputsBytes = 1 << 20
)

// jobOutput and artifactOutput are the shapes of the "jobs" and "artifacts" outputs.
type jobOutput struct {
	Name        string `json:"name"`
	Conclusion  string `json:"conclusion"`
	StartedAt   string `json:"startedAt,omitempty"`
	CompletedAt string `json:"completedAt,omitempty"`
}

type artifactOutput struct {
	Name        string `json:"name"`
	SizeInBytes int64  `json:"sizeInBytes"`
}

// collectOutputs gathers a successful run's outputs: runURL, runID, jobs, artifacts and the
// keys of the trueup-outputs artifact's JSON file, which win over the others.
func (a *Action) collectOutputs(ctx context.Context, run *github.WorkflowRun, runURL string, supersedes int64) (json.RawMessage, error) {
	jobs, err := a.listJobs(ctx, run.GetID())
	if err != nil {
		return nil, err
	}
	arts, err := a.listArtifacts(ctx, run.GetID())
	if err != nil {
		return nil, err
	}
	out := map[string]any{
		"runURL":    runURL,
		"runID":     run.GetID(),
		"jobs":      jobOutputs(jobs),
		"artifacts": artifactOutputs(arts),
	}
	if supersedes != 0 {
		out["supersedes"] = supersedes
	}
	extra, _, err := a.readOutputsArtifact(ctx, run.GetID(), arts)
	if err != nil {
		return nil, err
	}
	for k, v := range extra {
		out[k] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode outputs: %w", err)
	}
	return b, nil
}

// readOutputsArtifact reads the JSON object of the run's trueup-outputs artifact among arts;
// found is false when the run published none (or it expired).
func (a *Action) readOutputsArtifact(ctx context.Context, runID int64, arts []*github.Artifact) (out map[string]any, found bool, err error) {
	for _, art := range arts {
		if art.GetName() != outputsArtifact || art.GetExpired() {
			continue
		}
		zipped, err := a.downloadArtifact(ctx, art.GetID(), maxOutputsBytes)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return nil, false, actions.Terminalf("artifact %s of run %d: %w", outputsArtifact, runID, err)
			}
			return nil, false, err
		}
		out, err := readOutputsZip(zipped)
		if err != nil {
			// The run is over: its artifact will not change until a new run.
			return nil, false, actions.Terminalf("artifact %s of run %d: %w", outputsArtifact, runID, err)
		}
		return out, true, nil
	}
	return nil, false, nil
}

func jobOutputs(jobs []*github.WorkflowJob) []jobOutput {
	out := make([]jobOutput, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, jobOutput{
			Name:        j.GetName(),
			Conclusion:  j.GetConclusion(),
			StartedAt:   formatTimestamp(j.StartedAt),
			CompletedAt: formatTimestamp(j.CompletedAt),
		})
	}
	return out
}

func artifactOutputs(arts []*github.Artifact) []artifactOutput {
	out := make([]artifactOutput, 0, len(arts))
	for _, art := range arts {
		out = append(out, artifactOutput{Name: art.GetName(), SizeInBytes: art.GetSizeInBytes()})
	}
	return out
}

func formatTimestamp(t *github.Timestamp) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// readOutputsZip reads the JSON object in the trueup-outputs artifact: its only file, or
// outputs.json when there are several.
func readOutputsZip(data []byte) (map[string]any, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("not a zip archive: %w", err)
	}
	var files []*zip.File
	for _, f := range zr.File {
		if !f.FileInfo().IsDir() {
			files = append(files, f)
		}
	}
	var f *zip.File
	switch {
	case len(files) == 1:
		f = files[0]
	default:
		for _, c := range files {
			if path.Base(c.Name) == outputsFile {
				f = c
				break
			}
		}
		if f == nil {
			return nil, fmt.Errorf("want one JSON file (or %s), found %d files", outputsFile, len(files))
		}
	}
	if f.UncompressedSize64 > maxOutputsBytes {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", f.Name, errTooLarge, maxOutputsBytes)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	defer rc.Close()
	// The header's size may lie; the reader is bounded as well.
	b, err := readLimited(rc, maxOutputsBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	return decodeObject(b, f.Name)
}

// decodeObject decodes one JSON object, keeping numbers' exact digits.
func decodeObject(b []byte, name string) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %w", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: trailing data after the JSON object", name)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a JSON object, got %s", name, jsonKind(v))
	}
	return m, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "a value"
}
