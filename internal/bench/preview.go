package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/commitstatus/forgetest"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/preview"
	"github.com/trueup-dev/trueup/internal/server"
	"github.com/trueup-dev/trueup/internal/webhook"
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
	w, err := b.syncedRepo(ctx, "-preview")
	if err != nil {
		return err
	}
	defer w.close()
	repo, st, src := w.repo, w.st, w.src
	forge := forgetest.New(token, false)
	defer forge.Close()
	pub, err := commitstatus.NewPreviewer(commitstatus.Config{Provider: commitstatus.ProviderGitHub, Token: token, BaseURL: forge.URL + "/", Repo: "acme/infra"}, "bench")
	if err != nil {
		return err
	}
	runner := preview.New(preview.Options{Source: "bench", Fetcher: src, Publisher: pub, Store: st, ExternalURL: "http://127.0.0.1:8080", Logger: b.log,
		Checker: &preview.Checker{Source: "bench", Store: st, Loader: manifest.NewLoader(), Prune: true,
			Actions: map[string]actions.Action{"act": noopPlanner{}}}})
	if err := runner.Start(ctx); err != nil {
		return err
	}
	defer runner.Stop()
	hooks := webhook.New(webhook.Options{Store: st, Logger: b.log,
		Sources: map[string]webhook.Source{"bench": {Name: "bench", Secret: secret, Branch: "main", Preview: true}},
		Trigger: func(string, string) {}, Preview: runner.Submit})
	api := httptest.NewServer(server.New(st, server.Options{Webhooks: hooks}, b.log).Handler())
	defer api.Close()

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
		req, _ := http.NewRequest(http.MethodPost, api.URL+"/hooks/bench", bytes.NewReader([]byte(body)))
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
