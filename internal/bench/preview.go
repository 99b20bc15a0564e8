package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus/forgetest"
)

// noopPlanner plans nothing, at once.
type noopPlanner struct{}

func (noopPlanner) Reconcile(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}
func (noopPlanner) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}
func (noopPlanner) Plan(context.Context, actions.Request) (actions.Plan, error) {
	return actions.Plan{Summary: "no changes"}, nil
}

// previewLatency measures a signed pull_request webhook received → the preview's comment
// posted on a fake GitHub, for a 1,000-resource repository and a pull request changing ten
// resources (noop plans).
func (b *bench) previewLatency(ctx context.Context) error {
	const secret, token = "bench-secret", "bench-token"
	repo, err := b.repo1k("-preview")
	if err != nil {
		return err
	}
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return err
	}
	defer st.Close()
	forge := forgetest.New(token, false)
	defer forge.Close()
	// A replica as serve runs it, previewing the source's pull requests on the fake forge.
	d, api, err := b.startDaemon(ctx, "preview", url, repo, secret, fmt.Sprintf(`, preview: {enabled: true},
      commitStatus: {provider: github, token: %s, baseURL: %q, repo: acme/infra}`, token, forge.URL+"/"), 16, noopPlanner{})
	if err != nil {
		return err
	}
	defer d.Stop()
	if err := waitReady(ctx, st, 1000, 2*time.Minute); err != nil {
		return err
	}

	if err := git(repo, "checkout", "-q", "-b", "pr"); err != nil {
		return err
	}
	var lat []time.Duration
	for i := 1; i <= 20; i++ {
		content := widgets(1000, 50, 0)["widgets/w0003.yaml"]
		for j := 0; j < 10; j++ {
			n := 150 + j
			content = strings.Replace(content, fmt.Sprintf("spec: {size: %d}", n), fmt.Sprintf("spec: {size: %d}", 100000*i+n), 1)
		}
		if err := writeFiles(repo, map[string]string{"widgets/w0003.yaml": content}); err != nil {
			return err
		}
		if err := git(repo, "commit", "-q", "-am", fmt.Sprint("pr change ", i)); err != nil {
			return err
		}
		if err := git(repo, "update-ref", "refs/pull/7/head", "HEAD"); err != nil {
			return err
		}
		out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
		if err != nil {
			return err
		}
		sha := strings.TrimSpace(string(out))
		body := fmt.Sprintf(`{"action":"synchronize","number":7,"pull_request":{"number":7,"head":{"sha":%q},"base":{"ref":"main"}}}`, sha)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		req, _ := http.NewRequest(http.MethodPost, api+"/hooks/bench", bytes.NewReader([]byte(body)))
		req.Header.Set("X-GitHub-Event", "pull_request")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprint("bench-pr-", i))
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		sent := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("webhook answered %d", resp.StatusCode)
		}
		posted := false
		deadline := time.After(30 * time.Second)
		for !posted {
			select {
			case <-forge.Changed():
			case <-deadline:
				return fmt.Errorf("no comment within 30 s of pull request webhook %d", i)
			}
			for _, c := range forge.Comments() {
				if strings.Contains(c.Body, sha[:12]) {
					if !strings.Contains(c.Body, "0 to add, 10 to change, 0 to delete, 990 unchanged") {
						return fmt.Errorf("unexpected preview: %.400s", c.Body)
					}
					posted = true
				}
			}
		}
		lat = append(lat, time.Since(sent))
	}
	record("preview_latency_p99", ms(percentile(lat, 0.99)), "ms", "≤ 2000", atMost(2000))
	return nil
}
