package daemon

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/trueup-dev/trueup/internal/config"
	"github.com/trueup-dev/trueup/internal/sealed"
)

// Swap makes next (Build's, of a reload's config) the running sources in place of the
// running ones (old is the config they run), as ch says: the unchanged ones keep running,
// the removed and changed ones stop, the added and changed ones start from next; a changed
// source whose new copy fails to start runs its previous copy again (Rollback). replace
// swaps the action instances and the config, once the preview runners that plan with the
// old instances have stopped. It returns what failed to start.
func (s *sourceSet) Swap(old *config.Config, next *pendingSources, ch config.Changes, replace func()) []string {
	defer next.Close()
	var names []string
	for _, sc := range next.cfg.Sources {
		names = append(names, sc.Name)
	}
	running := s.All()
	kept, stopping, restart := planSources(slices.Sorted(maps.Keys(running)), ch)
	m := make(map[string]*runningSource, len(next.built))
	for _, name := range kept {
		m[name] = running[name]
	}
	for _, sc := range next.cfg.Sources {
		if slices.Contains(ch.WebhookOnly, sc.Name) && m[sc.Name] != nil {
			m[sc.Name].cfg = sc
		}
	}
	// A preview runner plans with the instances it was built with: with any instance
	// changed, the runners of the sources kept are rebuilt (their sources keep running).
	var replan []string
	if len(ch.ActionsAdded)+len(ch.ActionsRemoved)+len(ch.ActionsChanged) > 0 {
		for name, rs := range m {
			if rs.preview.Load() != nil {
				replan = append(replan, name)
			}
		}
	}
	// Their preview runners before the instances they plan with are replaced: a plan of an
	// old instance must not overlap a call of the new one in the same working copy.
	var stopped sync.WaitGroup
	for _, name := range append(slices.Clone(stopping), replan...) {
		if rs := running[name]; rs != nil {
			if p := rs.preview.Load(); p != nil {
				stopped.Go(p.Stop)
			}
		}
	}
	stopped.Wait()
	replace()
	// Readers (webhooks, previews, terraform modules) stop getting the sources about to close
	// before they close; a restarting one answers "being restarted" (retried), not "none".
	var failed []string
	s.publish(m, restart)
	for _, name := range replan {
		rs := m[name]
		err := s.attachPreview(next.cfg, rs)
		if err == nil {
			err = rs.startPreview()
		}
		if err != nil {
			msg := s.env.redact.Scrub(err.Error())
			s.env.log.Error("reload: preview runner not started", "source", name, "err", msg)
			failed = append(failed, msg+" (the source syncs; its pull requests are not previewed)")
		}
	}
	// Stopped before the new ones start: a changed Git source reuses its mirror's folder.
	for _, name := range stopping {
		if rs := running[name]; rs != nil {
			stopped.Go(rs.stop)
		}
	}
	stopped.Wait()
	// The keys of the copies about to start, then (below) of those that did.
	starting := maps.Clone(m)
	for name, rs := range next.built {
		if starting[name] == nil {
			starting[name] = rs
		}
	}
	s.tellReveal(names, starting)
	for _, sc := range next.cfg.Sources {
		rs := next.built[sc.Name]
		delete(next.built, sc.Name)
		if m[sc.Name] != nil {
			rs.close() // unchanged: built only to check it
			continue
		}
		prev := running[sc.Name] // stopped; nil: added
		rebuild := func() (*runningSource, error) { return s.Rollback(old, prev) }
		if prev == nil {
			rebuild = nil
		}
		run, err := swapIn(rs, func(rs *runningSource) error { return s.startSource(next.cfg, rs) }, rebuild)
		if err != nil {
			msg := s.env.redact.Scrub(err.Error())
			s.env.log.Error("reload: source not started", "source", sc.Name, "err", msg)
			failed = append(failed, msg)
		}
		if run != nil {
			m[sc.Name] = run
		}
	}
	s.tellReveal(names, m)
	var notRunning []string
	for _, name := range names {
		if m[name] == nil {
			notRunning = append(notRunning, name)
		}
	}
	s.publish(m, notRunning)
	return failed
}

// Rollback builds prev (a stopped copy of a source of old, the config running before a
// reload) again and starts it against the action instances in use: the copy that runs
// when its new one failed to start. It returns the copy (nil: none built) and why it did
// not start.
func (s *sourceSet) Rollback(old *config.Config, prev *runningSource) (*runningSource, error) {
	back, err := s.build(old, prev.cfg, map[string]*sealed.Keys{prev.cfg.Name: prev.keys}, s.env.acts.Current())
	if err == nil {
		err = s.startSource(old, back)
	}
	return back, err
}

func (s *sourceSet) tellReveal(names []string, running map[string]*runningSource) {
	if s.env.reveal != nil {
		s.env.reveal(names, running)
	}
}

// swapIn starts next, whose previous copy (if any) is stopped. When next fails to start it
// is stopped and, for a changed source, rebuild builds and starts the previous copy again, so
// that a source is never left dead by a reload that reports it. It returns the copy that
// runs (nil: none) and why next is not it.
func swapIn(next *runningSource, start func(*runningSource) error, rebuild func() (*runningSource, error)) (*runningSource, error) {
	err := start(next)
	if err == nil {
		return next, nil
	}
	next.stop()
	if rebuild == nil {
		return nil, fmt.Errorf("%w (not running on this replica until the next reload or restart)", err)
	}
	back, berr := rebuild()
	if berr != nil {
		if back != nil {
			back.stop()
		}
		return nil, fmt.Errorf("%w; its previous config failed to start again too (not running on this replica until the next reload or restart): %w", err, berr)
	}
	return back, fmt.Errorf("%w (its previous config runs again)", err)
}
