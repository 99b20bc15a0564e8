package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Scope is the namespaces a query may return rows of: what the caller may see (DESIGN §9,
// authorization). Every list, count and feed of resources, events and sources takes one, and
// the filter is part of the SQL, so that pages, counts and continue tokens stay right.
//
// The zero Scope sees nothing: a caller that forgets to say what it may see gets an empty
// answer, never everything.
type Scope struct {
	all        bool
	namespaces []string // sorted, distinct; nil when all
}

// Everything is the scope of a caller that sees every namespace. Queries in it carry no
// namespace predicate at all: their text, and so their plans, are those of a server without
// authorization.
var Everything = Scope{all: true}

// InNamespaces is the scope of the namespaces given; "*" among them is Everything, and none
// is a scope that sees nothing.
func InNamespaces(namespaces ...string) Scope {
	if slices.Contains(namespaces, "*") {
		return Everything
	}
	ns := slices.Clone(namespaces)
	slices.Sort(ns)
	ns = slices.Compact(ns)
	if ns == nil {
		ns = []string{}
	}
	return Scope{namespaces: ns}
}

// All reports whether the scope sees every namespace.
func (sc Scope) All() bool { return sc.all }

// Contains reports whether the scope sees namespace ns.
func (sc Scope) Contains(ns string) bool {
	if sc.all {
		return true
	}
	_, ok := slices.BinarySearch(sc.namespaces, ns)
	return ok
}

// Namespaces returns the namespaces seen (nil for Everything); the caller must not modify it.
func (sc Scope) Namespaces() []string { return sc.namespaces }

// String is for logs and test failures.
func (sc Scope) String() string {
	if sc.all {
		return "*"
	}
	return fmt.Sprint(sc.namespaces)
}

// where returns the predicate limiting column col (a namespace) to the scope, or "" for
// Everything, with its argument appended through arg.
func (sc Scope) where(col string, arg func(any) string) string {
	if sc.all {
		return ""
	}
	return col + " = ANY(" + arg(sc.namespaces) + "::text[])"
}

// sourceWhere returns the predicate limiting column col (a source's name) to the sources the
// scope sees — those with a resource in one of its namespaces — or "" for Everything. A
// source without resources is seen by Everything only: nothing ties it to a namespace.
func (sc Scope) sourceWhere(col string, arg func(any) string) string {
	if sc.all {
		return ""
	}
	return "EXISTS (SELECT 1 FROM resources vis WHERE vis.source = " + col + " AND vis.namespace = ANY(" + arg(sc.namespaces) + "::text[]))"
}

// SourceVisible reports whether source name exists and the scope sees it (it has a resource
// in one of the scope's namespaces), so that callers answer 404 alike for a missing source
// and one out of scope.
func (s *Store) SourceVisible(ctx context.Context, sc Scope, name string) (bool, error) {
	args := params{name}
	q := "SELECT EXISTS (SELECT 1 FROM sources WHERE name = $1"
	if w := sc.sourceWhere("sources.name", args.add); w != "" {
		q += " AND " + w
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, q+")", args...).Scan(&ok); err != nil {
		return false, fmt.Errorf("source %s visible: %w", name, err)
	}
	return ok, nil
}

// VisibleSources returns the names of the sources the scope sees, in order.
func (s *Store) VisibleSources(ctx context.Context, sc Scope) ([]string, error) {
	var args params
	q := "SELECT name FROM sources"
	if w := sc.sourceWhere("sources.name", args.add); w != "" {
		q += " WHERE " + w
	}
	rows, err := s.pool.Query(ctx, q+" ORDER BY name", args...)
	if err != nil {
		return nil, fmt.Errorf("visible sources: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("visible sources: %w", err)
	}
	return names, nil
}
