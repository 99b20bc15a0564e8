package preview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/commitstatus"
	"github.com/trueup-dev/trueup/internal/store"
	"github.com/trueup-dev/trueup/sources"
)

// Fetcher reads a pull request's head (gitsource.Source.FetchRef).
type Fetcher interface {
	FetchRef(ctx context.Context, ref, want string) (*sources.Snapshot, error)
}

// Publisher shows previews on the forge (commitstatus.Previewer).
type Publisher interface {
	SetStatus(ctx context.Context, sha string, st commitstatus.PreviewState, desc, targetURL string) error
	CreateComment(ctx context.Context, number int, body string) (id, link string, err error)
	EditComment(ctx context.Context, number int, id, body string) (link string, err error)
	CommentLimit() int
}

// Options configure one source's runner.
type Options struct {
	Source    string
	Checker   *Checker
	Fetcher   Fetcher
	Publisher Publisher
	Store     *store.Store
	// ExternalURL is the dashboard's address (server.externalURL); the comment and the status
	// link to <ExternalURL>/sources/<source>/previews/<n>. Empty: no link.
	ExternalURL string
	// QueueSize bounds the pull requests waiting for a preview (default 64).
	QueueSize int
	// Replica names this replica in the previews it runs, so that a preview left Running by
	// a replica that died is told from one a live replica runs.
	Replica string
	Logger  *slog.Logger
}

// publishTimeout bounds publishing one preview (row, comment, status) once it is computed.
const publishTimeout = 2 * time.Minute

// ErrQueueFull is Submit's answer when QueueSize pull requests already wait.
var ErrQueueFull = errors.New("too many pull requests waiting for a preview")

// errStopped is Submit's answer after Stop.
var errStopped = errors.New("the preview runner is stopped")

// Runner previews one source's pull requests, one at a time, on a goroutine of its own: it
// never takes the source's lease, never applies, and writes only the previews table and the
// forge. A newer head of a pull request replaces an older one waiting in the queue and
// cancels the preview of an older one that is running.
type Runner struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	queue     []Event
	running   *Event
	cancelRun context.CancelFunc
	stopped   bool
	started   bool
	wake      chan struct{}
	done      chan struct{}
	cancel    context.CancelFunc

	// runs counts finished previews; tests wait on it.
	runs chan Event
}

// New returns a runner; call Start.
func New(opts Options) *Runner {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 64
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{opts: opts, log: logger.With("component", "preview", "source", opts.Source),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Start runs the runner's goroutine until ctx ends or Stop is called.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started || r.stopped {
		return errors.New("preview runner: started twice or after Stop")
	}
	r.started = true
	ctx, r.cancel = context.WithCancel(ctx)
	go r.loop(ctx)
	return nil
}

// Stop cancels the running preview, drops the queue and waits for the goroutine; safe twice.
func (r *Runner) Stop() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	started := r.started
	r.queue = nil
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Unlock()
	if started {
		<-r.done
	}
}

// Submit queues ev and returns at once: nil when it is queued (or already queued or
// running), ErrQueueFull when the queue is full.
func (r *Runner) Submit(ev Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return errStopped
	}
	q, a, cancel := admit(r.queue, r.running, ev, r.opts.QueueSize)
	r.queue = q
	switch a {
	case full:
		return ErrQueueFull
	case duplicate:
		r.log.Debug("preview already queued or running", "number", ev.Number, "head", clip.Rev(ev.HeadSHA))
		return nil
	}
	if cancel && r.cancelRun != nil {
		r.log.Info("preview superseded by a newer head", "number", ev.Number, "head", clip.Rev(r.running.HeadSHA), "newer", clip.Rev(ev.HeadSHA))
		r.cancelRun()
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return nil
}

func (r *Runner) loop(ctx context.Context) {
	defer close(r.done)
	r.interrupted(ctx)
	for {
		r.mu.Lock()
		var ev *Event
		if len(r.queue) > 0 {
			e := r.queue[0]
			r.queue = r.queue[1:]
			ev = &e
		}
		var runCtx context.Context
		if ev != nil {
			r.running = ev
			runCtx, r.cancelRun = context.WithCancel(ctx)
		}
		r.mu.Unlock()
		if ev == nil {
			select {
			case <-ctx.Done():
				return
			case <-r.wake:
				continue
			}
		}
		r.preview(runCtx, *ev)
		r.mu.Lock()
		r.cancelRun()
		r.running, r.cancelRun = nil, nil
		r.mu.Unlock()
		if r.runs != nil {
			r.runs <- *ev
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// preview previews one head and publishes the outcome. A cancelled preview (superseded,
// shutting down) publishes nothing more: the newer one will.
func (r *Runner) preview(ctx context.Context, ev Event) {
	start := time.Now()
	log := r.log.With("number", ev.Number, "head", clip.Rev(ev.HeadSHA), "delivery", ev.Delivery)
	link := r.dashboardURL(ev.Number)
	if r.unchanged(ctx, ev) {
		// A GitLab "update" of a title or a label, a pull request reopened as it was: the
		// preview on the forge is already this one.
		log.Debug("preview unchanged: same head, same applied revision")
		return
	}
	row := store.Preview{Source: r.opts.Source, Number: ev.Number, Provider: ev.Provider, Title: ev.Title, URL: ev.URL,
		HeadSHA: ev.HeadSHA, State: store.PreviewRunning, Message: "previewing " + clip.Rev(ev.HeadSHA), Replica: r.opts.Replica}
	if _, err := r.opts.Store.SavePreview(ctx, row); err != nil {
		log.Warn("record preview", "err", err)
		return
	}
	if err := r.opts.Publisher.SetStatus(ctx, ev.HeadSHA, commitstatus.PreviewPending, "previewing the pull request", link); err != nil && ctx.Err() == nil {
		log.Warn("post preview status", "err", err)
	}
	res, base, sha, failure := r.compute(ctx, ev)
	if ctx.Err() != nil {
		log.Info("preview cancelled", "err", context.Cause(ctx))
		return
	}
	// Past this point the preview is published to the end: a cancel in the middle would
	// leave a comment created on the forge whose id is never stored (and a second one
	// created by the next preview), or a row without its status.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	row.HeadSHA, row.BaseRevision = sha, base
	state, status, desc := store.PreviewSucceeded, commitstatus.PreviewSuccess, CountsLine(res.Counts)
	switch {
	case failure != "":
		state, status, desc = store.PreviewError, commitstatus.PreviewError, "could not preview: "+failure
		row.Message = desc
	case len(res.Errors) > 0:
		state, status = store.PreviewFailed, commitstatus.PreviewFailure
		desc = fmt.Sprintf("%d invalid: %s", len(res.Errors), errorLine(res.Errors[0]))
		row.Message = CountsLine(res.Counts)
	default:
		row.Message = desc
	}
	row.State = state
	if failure == "" {
		b, err := json.Marshal(res)
		if err != nil {
			log.Error("encode preview", "err", err)
			return
		}
		row.Result = b
	}
	// Another replica may have started on a newer head of this pull request meanwhile (the
	// webhook of a later push delivered to it): the last one started publishes.
	if cur, err := r.opts.Store.GetPreview(ctx, r.opts.Source, ev.Number); err == nil && cur.HeadSHA != ev.HeadSHA && cur.HeadSHA != sha {
		log.Info("preview superseded by a newer head on another replica", "newer", clip.Rev(cur.HeadSHA))
		return
	}
	if _, err := r.opts.Store.SavePreview(ctx, row); err != nil {
		log.Warn("record preview", "err", err)
		return
	}
	body := RenderComment(Comment{Source: r.opts.Source, HeadSHA: sha, Result: res, Failure: failure, DashboardURL: link,
		Limit: r.opts.Publisher.CommentLimit()})
	if err := r.comment(ctx, ev, body); err != nil && ctx.Err() == nil {
		log.Warn("publish preview comment", "err", err)
	}
	if err := r.opts.Publisher.SetStatus(ctx, sha, status, desc, link); err != nil && ctx.Err() == nil {
		log.Warn("post preview status", "err", err)
	}
	log.Info("previewed pull request", "state", state, "add", res.Counts.Add, "change", res.Counts.Change, "delete", res.Counts.Delete,
		"invalid", res.Counts.Invalid, "duration_ms", time.Since(start).Milliseconds())
}

// interruptedMsg is the message of a preview whose replica stopped while running it.
const interruptedMsg = "interrupted: the replica stopped; push again or redeliver the webhook"

// interrupted ends the previews of the source that a replica which is gone left Running:
// their commit status would stay pending, and a required check with it.
func (r *Runner) interrupted(ctx context.Context) {
	ps, err := r.opts.Store.InterruptPreviews(ctx, r.opts.Source, interruptedMsg)
	if err != nil {
		r.log.Warn("could not end interrupted previews", "err", err)
		return
	}
	for _, p := range ps {
		r.log.Info("preview interrupted by a stopped replica", "number", p.Number, "head", clip.Rev(p.HeadSHA))
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := r.opts.Publisher.SetStatus(sctx, p.HeadSHA, commitstatus.PreviewError, interruptedMsg, r.dashboardURL(p.Number))
		cancel()
		if err != nil && ctx.Err() == nil {
			r.log.Warn("post preview status", "number", p.Number, "err", err)
		}
	}
}

// unchanged reports whether ev's head was already previewed to the end against the
// source's applied revision of now.
func (r *Runner) unchanged(ctx context.Context, ev Event) bool {
	cur, err := r.opts.Store.GetPreview(ctx, r.opts.Source, ev.Number)
	if err != nil || cur.HeadSHA != ev.HeadSHA || (cur.State != store.PreviewSucceeded && cur.State != store.PreviewFailed) {
		return false
	}
	src, err := r.opts.Store.GetSource(ctx, r.opts.Source)
	return err == nil && src.Revision == cur.BaseRevision
}

// compute fetches and checks ev's head; failure says why there is no result.
func (r *Runner) compute(ctx context.Context, ev Event) (res Result, base, sha, failure string) {
	// A failure is posted on the forge: no path of the controller's (the mirror's folder)
	// goes with it.
	snap, err := r.opts.Fetcher.FetchRef(ctx, ev.Ref(), ev.HeadSHA)
	if err != nil {
		return Result{}, "", ev.HeadSHA, sanitize(err.Error(), nil, r.opts.Checker.Redact, r.opts.Checker.Roots)
	}
	res, base, err = r.opts.Checker.CheckFrom(ctx, snap, Origin{Fork: ev.Fork})
	if err != nil {
		return Result{}, "", snap.Revision, sanitize(err.Error(), nil, r.opts.Checker.Redact, r.opts.Checker.Roots)
	}
	return res, base, snap.Revision, ""
}

// comment creates the pull request's comment, or edits the one stored, under the row lock
// that keeps two replicas from both creating one.
func (r *Runner) comment(ctx context.Context, ev Event, body string) error {
	return r.opts.Store.PublishPreviewComment(ctx, r.opts.Source, ev.Number, func(ctx context.Context, id string) (string, string, error) {
		if id != "" {
			link, err := r.opts.Publisher.EditComment(ctx, ev.Number, id, body)
			if !errors.Is(err, commitstatus.ErrCommentNotFound) {
				return id, link, err
			}
			r.log.Info("preview comment was deleted on the forge; creating another", "number", ev.Number)
		}
		id, link, err := r.opts.Publisher.CreateComment(ctx, ev.Number, body)
		if link == "" && ev.URL != "" && ev.Provider == ProviderGitLab {
			link = ev.URL + "#note_" + id
		}
		return id, link, err
	})
}

func (r *Runner) dashboardURL(number int) string {
	if r.opts.ExternalURL == "" {
		return ""
	}
	return strings.TrimSuffix(r.opts.ExternalURL, "/") + "/sources/" + url.PathEscape(r.opts.Source) + "/previews/" + strconv.Itoa(number)
}
