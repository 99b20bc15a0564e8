package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trueup-dev/trueup/actions"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/internal/syncer"
	"github.com/trueup-dev/trueup/sources/gitsource"
)

func writeFiles(root string, files map[string]string) error {
	for p, d := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(d), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// syncFigures measures syncs of 10,000 resources; with rules, of a type that carries two
// CEL rules (figure names get the suffix _rules).
func (b *bench) syncFigures(ctx context.Context, rules bool) error {
	name, typ := "repo10k", benchType
	suffix := ""
	if rules {
		name, typ, suffix = "repo10k-rules", benchRulesType, "_rules"
	}
	repo := filepath.Join(b.dir, name)
	if err := git(b.dir, "init", "-q", "-b", "main", repo); err != nil {
		return err
	}
	files := widgets(10000, 100, 0)
	files["types/widget.yaml"] = typ
	if err := writeFiles(repo, files); err != nil {
		return err
	}
	if err := git(repo, "add", "-A"); err != nil {
		return err
	}
	if err := git(repo, "commit", "-q", "-m", "10k"); err != nil {
		return err
	}
	st, _, err := b.freshStore(ctx, 4)
	if err != nil {
		return err
	}
	defer st.Close()
	src, err := gitsource.New(gitsource.Config{Name: "bench", URL: repo, Branch: "main", Dir: filepath.Join(b.dir, "mirror"+suffix)}, b.log)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "bench", URL: repo}); err != nil {
		return err
	}
	s := syncer.New(st, syncer.Options{Name: "bench", Source: src, Interval: time.Hour, Prune: true, Replica: "bench"}, b.log)
	start := time.Now()
	out, err := s.SyncOnce(ctx)
	if err != nil {
		return err
	}
	if out.Result.Created != 10000 {
		return fmt.Errorf("first sync created %d", out.Result.Created)
	}
	record("sync_first_10k"+suffix, time.Since(start).Seconds(), "s", "≤ 3", atMost(3))

	var polls []time.Duration
	for i := 0; i < 50; i++ {
		start := time.Now()
		out, err := s.SyncOnce(ctx)
		if err != nil || !out.Unchanged {
			return fmt.Errorf("noop poll: %+v %v", out, err)
		}
		polls = append(polls, time.Since(start))
	}
	record("sync_noop_poll"+suffix, ms(percentile(polls, 0.5)), "ms", "≤ 20", atMost(20))

	change, err := oneChanges(ctx, s, repo, "widgets/w0042.yaml", widgets(10000, 100, 0)["widgets/w0042.yaml"])
	if err != nil {
		return err
	}
	record("sync_one_change_10k"+suffix, ms(change), "ms", "≤ 300", atMost(300))
	return nil
}

// oneChanges commits five changes of file (content with one more widget each, the first
// created, then updated) to repo and returns the median time s takes to apply one.
func oneChanges(ctx context.Context, s *syncer.Syncer, repo, file, content string) (time.Duration, error) {
	var changes []time.Duration
	for i := 1; i <= 5; i++ {
		c := content + fmt.Sprintf("---\napiVersion: bench.example.com/v1\nkind: Widget\nmetadata: {name: extra, namespace: ns00, labels: {team: t0}}\nspec: {size: %d}\n", i)
		if err := writeFiles(repo, map[string]string{file: c}); err != nil {
			return 0, err
		}
		if err := git(repo, "commit", "-q", "-am", fmt.Sprint("change ", i)); err != nil {
			return 0, err
		}
		start := time.Now()
		out, err := s.SyncOnce(ctx)
		if err != nil || out.Result.Created+out.Result.Updated != 1 {
			return 0, fmt.Errorf("one change: %+v %v", out, err)
		}
		changes = append(changes, time.Since(start))
	}
	return percentile(changes, 0.5), nil
}

// timingAction records when each call starts.
type timingAction struct{ started chan time.Time }

func (a *timingAction) Reconcile(context.Context, actions.Request) (actions.Result, error) {
	a.started <- time.Now()
	return actions.Result{Done: true}, nil
}

func (a *timingAction) Delete(context.Context, actions.Request) (actions.Result, error) {
	return actions.Result{Done: true}, nil
}

// claimLatency measures commit of work → worker started, woken through NOTIFY (the fallback
// poll is 1 s, so anything far below that came through LISTEN).
func (b *bench) claimLatency(ctx context.Context) error {
	st, url, err := b.freshStore(ctx, 4)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RegisterSource(ctx, store.SourceConfig{Name: "bench"}); err != nil {
		return err
	}
	// A replica as serve runs it, without sources: the revisions are applied below.
	act := &timingAction{started: make(chan time.Time, 16)}
	d, _, err := b.startDaemon(ctx, "claim", url, "", "", "", 4, act)
	if err != nil {
		return err
	}
	defer d.Stop()
	loader := manifest.NewLoader()
	var lat []time.Duration
	for i := 0; i < 200; i++ {
		set, err := loadSetWith(loader, widgets(1, 1, i))
		if err != nil {
			return err
		}
		if _, err := st.ApplyRevision(ctx, store.ApplyParams{Source: "bench", Revision: fmt.Sprint(i), Set: set, Prune: true}); err != nil {
			return err
		}
		committed := time.Now()
		select {
		case t := <-act.started:
			lat = append(lat, t.Sub(committed))
		case <-time.After(5 * time.Second):
			return fmt.Errorf("no worker started within 5 s")
		}
		time.Sleep(5 * time.Millisecond) // let the completion land before the next change
	}
	record("claim_latency_p99", ms(percentile(lat, 0.99)), "ms", "≤ 250", atMost(250))
	return nil
}
