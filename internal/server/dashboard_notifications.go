package server

import (
	"net/http"
	"time"

	"github.com/trueup-dev/trueup/internal/auth"
	"github.com/trueup-dev/trueup/internal/store"
)

// notificationsPageLimit is how many outbox entries the page lists, newest first.
const notificationsPageLimit = 200

// notificationsData is the notifications page: the outbox, filtered by state.
type notificationsData struct {
	State string // "" (all), pending, sent or dead
	Tabs  []notificationTab
	Items []notificationRow
	Limit int
}

type notificationTab struct {
	Label, Link string
	Current     bool
}

type notificationRow struct {
	CreatedAt     time.Time
	Event         string
	Resource      string // Kind/namespace/name, "" for a source's event
	ResourceLink  string
	Source        string
	Revision      string
	Phase         string
	Message       string
	State         string
	Attempts      int
	NextAttemptAt time.Time
	FinishedAt    *time.Time
	LastError     string
	Delivered     []string
}

// notificationsPage answers GET /notifications: the notifications outbox with its dead
// letters, for admins over every namespace (entries name resources of every namespace, as
// GET /api/v1/notifications).
func (s *Server) notificationsPage(w http.ResponseWriter, r *http.Request) {
	if !identity(r).Can(auth.Administer, "") {
		s.errorPage(w, r, http.StatusForbidden, "Forbidden",
			"Notifications name resources of every namespace: this page needs the admin role over every namespace.")
		return
	}
	ctx, cancel := pageContext(r)
	defer cancel()
	state := r.URL.Query().Get("state")
	switch state {
	case "", store.OutboxPending, store.OutboxSent, store.OutboxDead:
	default:
		s.errorPage(w, r, http.StatusBadRequest, "Bad request", "state must be pending, sent or dead")
		return
	}
	items, err := s.store.ListOutbox(ctx, state, notificationsPageLimit)
	if s.pageFailed(w, r, err) {
		return
	}
	d := notificationsData{State: state, Limit: notificationsPageLimit}
	for _, t := range []struct{ label, state string }{{"All", ""}, {"Pending", store.OutboxPending}, {"Sent", store.OutboxSent}, {"Dead letters", store.OutboxDead}} {
		link := "/notifications"
		if t.state != "" {
			link += "?state=" + t.state
		}
		d.Tabs = append(d.Tabs, notificationTab{Label: t.label, Link: link, Current: t.state == state})
	}
	for _, e := range items {
		row := notificationRow{CreatedAt: e.CreatedAt, Event: e.Event, Source: e.Source, Revision: e.Revision, Phase: e.Phase,
			Message: e.Message, State: e.State, Attempts: e.Attempts, NextAttemptAt: e.NextAttemptAt, FinishedAt: e.FinishedAt,
			LastError: e.LastError, Delivered: e.Done}
		if e.Name != "" {
			row.Resource = e.Kind + "/" + e.Namespace + "/" + e.Name
			row.ResourceLink = resourcePath(e.Namespace, e.Kind, e.Name)
		}
		d.Items = append(d.Items, row)
	}
	s.render(w, r, http.StatusOK, "notifications.html", layout{Title: "Notifications", Nav: "notifications", Page: d})
}
