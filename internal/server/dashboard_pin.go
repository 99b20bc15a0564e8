package server

import (
	"context"
	"net/url"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/store"
)

// Pinning on the dashboard: a banner on the overview for each pinned source, the pin on the
// source page with its revisions, and Pin / Unpin through the confirmation pages of
// dashboard_operate.go.

// sourceRevisionRows is how many revisions the source page lists (the pin form lists
// keptRevisions' worth).
const sourceRevisionRows = 10

// pinSentence says a pinned source's state ("" when it is not pinned).
func pinSentence(src store.Source) string {
	p := src.Pin
	if p == nil {
		return ""
	}
	s := "source " + src.Name + " is pinned at " + clip.Rev(p.Revision) + " by " + p.Actor
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	if src.PendingRevision != "" && src.PendingRevision != p.Revision && !src.Suspended {
		s += "; newer revision " + clip.Rev(src.PendingRevision) + " pending"
	}
	return s
}

// PinBanner is the overview's line for a pinned source ("" when it is not pinned).
func (v sourceView) PinBanner() string { return pinSentence(v.Source) }

// Pinned lists the overview's pinned sources.
func (d overviewData) Pinned() []sourceView {
	var out []sourceView
	for _, v := range d.Sources {
		if v.Pin != nil {
			out = append(out, v)
		}
	}
	return out
}

// revisionRow is one revision a source applied, with the link that pins it (operators only).
type revisionRow struct {
	Rev             revision
	Author          string
	AppliedAt       time.Time
	Current, Pinned bool
	PinLink         string
	Label           string // the pin form's option text
}

// revisionRows reads the last limit revisions src applied; canPin adds the links that pin
// each (but the pinned one).
func (s *Server) revisionRows(ctx context.Context, src store.Source, limit int, canPin bool) ([]revisionRow, error) {
	revs, err := s.store.SourceHistory(ctx, src.Name, limit)
	if err != nil {
		return nil, err
	}
	rows := make([]revisionRow, len(revs))
	for i, v := range revs {
		author := v.AuthorName
		if author == "" {
			author = v.AuthorEmail
		}
		row := revisionRow{Rev: makeRevision(src.URL, v.Revision), Author: author, AppliedAt: v.AppliedAt, Current: v.Current, Pinned: v.Pinned}
		if canPin && !v.Pinned {
			row.PinLink = sourcePath(src.Name) + "/confirm/pin?" + url.Values{"revision": {v.Revision}}.Encode()
		}
		row.Label = clip.Rev(v.Revision) + " applied " + v.AppliedAt.UTC().Format(time.RFC3339)
		if author != "" {
			row.Label += " by " + author
		}
		switch {
		case v.Current && v.Pinned:
			row.Label += " (applied, pinned)"
		case v.Current:
			row.Label += " (applied)"
		case v.Pinned:
			row.Label += " (pinned)"
		}
		rows[i] = row
	}
	return rows, nil
}
