package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// repo1k builds a 1,000-resource repository (50 widgets a file) named after suffix.
func (b *bench) repo1k(suffix string) (string, error) {
	repo := filepath.Join(b.dir, "repo"+suffix)
	if err := git(b.dir, "init", "-q", "-b", "main", repo); err != nil {
		return "", err
	}
	if err := writeFiles(repo, widgets(1000, 50, 0)); err != nil {
		return "", err
	}
	if err := git(repo, "add", "-A"); err != nil {
		return "", err
	}
	return repo, git(repo, "commit", "-q", "-m", "1k")
}

// webhookToReconcile measures a signed push webhook received → the first worker started on
// the changed resource, with a 1,000-resource repository.
func (b *bench) webhookToReconcile(ctx context.Context) error {
	const secret = "bench-secret"
	repo, err := b.repo1k("1k")
	if err != nil {
		return err
	}
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return err
	}
	defer st.Close()
	// A replica as serve runs it: it syncs the repository at start and reconciles it.
	act := &timingAction{started: make(chan time.Time, 2048)}
	d, api, err := b.startDaemon(ctx, "webhook", url, repo, secret, "", 16, act)
	if err != nil {
		return err
	}
	defer d.Stop()
	// Let the initial 1,000 reconciles finish before measuring.
	if err := waitReady(ctx, st, 1000, 2*time.Minute); err != nil {
		return err
	}
	for len(act.started) > 0 {
		<-act.started
	}

	var lat []time.Duration
	for i := 1; i <= 50; i++ {
		content := widgets(1000, 50, 0)["widgets/w0007.yaml"]
		content = strings.Replace(content, "spec: {size: 350}", fmt.Sprintf("spec: {size: %d}", 100000+i), 1)
		if err := writeFiles(repo, map[string]string{"widgets/w0007.yaml": content}); err != nil {
			return err
		}
		if err := git(repo, "commit", "-q", "-am", fmt.Sprint("change ", i)); err != nil {
			return err
		}
		body, _ := json.Marshal(map[string]any{"ref": "refs/heads/main", "after": ""})
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		req, _ := http.NewRequest(http.MethodPost, api+"/hooks/bench", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprint("bench-", i))
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
		select {
		case t := <-act.started:
			lat = append(lat, t.Sub(sent))
		case <-time.After(10 * time.Second):
			return fmt.Errorf("no reconcile within 10 s of webhook %d", i)
		}
		time.Sleep(20 * time.Millisecond)
		for len(act.started) > 0 {
			<-act.started
		}
	}
	record("webhook_to_reconcile_p99", ms(percentile(lat, 0.99)), "ms", "≤ 250", atMost(250))
	return nil
}
