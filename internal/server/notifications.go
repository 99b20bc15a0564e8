package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/trueup-dev/trueup/internal/store"
)

// notificationJSON is one outbox entry as the API shows it.
type notificationJSON struct {
	ID            int64             `json:"id"`
	CreatedAt     time.Time         `json:"createdAt"`
	Event         string            `json:"event"`
	Namespace     string            `json:"namespace"`
	Kind          string            `json:"kind"`
	Name          string            `json:"name"`
	Source        string            `json:"source"`
	Revision      string            `json:"revision"`
	Labels        map[string]string `json:"labels"`
	Phase         string            `json:"phase"`
	Message       string            `json:"message"`
	State         string            `json:"state"`
	Attempts      int               `json:"attempts"`
	NextAttemptAt time.Time         `json:"nextAttemptAt"`
	LastError     string            `json:"lastError"`
	Delivered     []string          `json:"delivered"`
	FinishedAt    *time.Time        `json:"finishedAt"`
}

func toNotificationJSON(e store.OutboxEntry) notificationJSON {
	labels := e.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return notificationJSON{ID: e.ID, CreatedAt: e.CreatedAt, Event: e.Event, Namespace: e.Namespace, Kind: e.Kind, Name: e.Name,
		Source: e.Source, Revision: e.Revision, Labels: labels, Phase: e.Phase, Message: e.Message, State: e.State, Attempts: e.Attempts,
		NextAttemptAt: e.NextAttemptAt, LastError: e.LastError, Delivered: nonNil(e.Done), FinishedAt: e.FinishedAt}
}

// listNotifications shows the notifications outbox, newest first (admins: entries name
// resources of every namespace).
func (s *Server) listNotifications(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	switch state {
	case "", store.OutboxPending, store.OutboxSent, store.OutboxDead:
	default:
		writeError(w, http.StatusBadRequest, "state must be pending, sent or dead")
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "limit must be 1..1000")
			return
		}
		limit = n
	}
	items, err := s.store.ListOutbox(r.Context(), state, limit)
	if s.fail(w, err) {
		return
	}
	out := make([]notificationJSON, len(items))
	for i, e := range items {
		out[i] = toNotificationJSON(e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": out})
}
