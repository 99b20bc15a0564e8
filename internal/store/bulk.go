package store

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/internal/clip"
)

// DefaultBulkCreate is how many resources one revision may create with an event and a change
// each. A revision that creates more (a first sync of a large repository) records one
// `Created` event on its source and one RELIST change instead: per resource they were a
// quarter of PostgreSQL's work for a created row (two rows and six index entries), and a
// watcher handed a hundred thousand ADDED changes lists again anyway.
const DefaultBulkCreate = 5000

// bulkCreate reports whether a revision creating created resources records them as one
// event and one change, given ApplyParams.BulkCreate (limit; 0 means DefaultBulkCreate).
func bulkCreate(created, limit int) bool {
	if limit <= 0 {
		limit = DefaultBulkCreate
	}
	return created > limit
}

// bulkCreatedEvent is the source's event for the n resources its revision created in bulk.
// It ends with " at <revision>" as every commit event does, and shares the rows' created_at
// (the transaction's start), by which a resource's timeline finds it.
func bulkCreatedEvent(p ApplyParams, n int) Event {
	return Event{Type: EventNormal, Reason: "Created", Message: fmt.Sprintf("created %d resources at %s", n, clip.Rev(p.Revision))}
}

// relistChanges tells watchers that the source's revision created more resources than the
// feed lists one by one: one change per namespace of the created resources (ins), so that a
// watcher limited to some namespaces hears of those it sees, and only of them.
func relistChanges(p ApplyParams, ins []int) []Change {
	seen := make(map[string]bool)
	var cs []Change
	for _, i := range ins {
		ns := p.Set.At(i).Namespace
		if !seen[ns] {
			seen[ns] = true
			cs = append(cs, Change{Object: "source", Type: ChangeRelist, Namespace: ns, Name: p.Source, Source: p.Source})
		}
	}
	slices.SortFunc(cs, func(a, b Change) int { return strings.Compare(a.Namespace, b.Namespace) })
	return cs
}
