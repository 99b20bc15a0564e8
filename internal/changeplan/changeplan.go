// Package changeplan decides what applying a revision to a source would change: which
// resources are created, get a new generation, change only their metadata, stay as they are,
// are deleted or are kept though their manifests are gone, and whether the prune guard
// refuses the deletions (Plan); which types are new, changed, unchanged or removed
// (PlanTypes). They are pure functions of plain values (a revision's resources may be lent
// through a function, Revision.At), used alike by the store's apply
// (which writes what they say), pull-request previews and `trueup diff`, so the three cannot
// disagree.
package changeplan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/internal/plural"
)

// Resource is one resource on either side of a plan, the revision's or the source's.
type Resource struct {
	Namespace, Kind, Name string
	// Spec and Meta fingerprint the spec and what else a revision can change (labels,
	// annotations, apiVersion, dependencies): equal fingerprints are no change. The
	// revision's and the applied side's must be made the same way (the manifest's SpecHash
	// and MetaHash, for example).
	Spec, Meta string
	// RequestedAt is the annotation trueup.dev/reconcile-requested-at ("" for none).
	RequestedAt string
}

// Applied is one of the source's resources as applied.
type Applied struct {
	Resource
	Deleting bool // being deleted
	Keep     bool // annotation trueup.dev/prune: disabled
	Orphaned bool // its manifest went earlier and pruning kept it
}

// Revision is the desired set: the revision's resources and how the messages name it.
type Revision struct {
	// Subject names the revision in the guard's message: "revision 3f2a9c1d0e4b" for a
	// sync or a preview, "folder ./manifests" for `trueup diff`.
	Subject string
	// NoManifests: the snapshot holds no manifest file at all (Guard).
	NoManifests bool
	// The revision's resources: Resources, or, when At is set, Len of them, the i-th given by
	// At(i). Plan reads each once, in order, and keeps none: a caller that holds them in
	// another form (the store, a Set of a million) lends them without a copy of every one.
	Resources []Resource
	Len       int
	At        func(i int) Resource
}

// resources is how many resources rev has and the function giving each.
func (rev *Revision) resources() (int, func(i int) Resource) {
	if rev.At != nil {
		return rev.Len, rev.At
	}
	return len(rev.Resources), func(i int) Resource { return rev.Resources[i] }
}

// Prune is a source's prune settings.
type Prune struct {
	Enabled bool
	// MaxFraction is prune.maxFraction (0: DefaultMaxFraction; 1 turns the share guard off).
	MaxFraction float64
	AllowEmpty  bool
}

// DefaultMaxFraction is the share of a source's resources one revision may delete.
const DefaultMaxFraction = 0.5

// MaxFraction is a configured prune.maxFraction with the default for 0 (or less).
func MaxFraction(f float64) float64 {
	if f <= 0 {
		return DefaultMaxFraction
	}
	return f
}

// Op is what happens to one resource of the revision.
type Op uint8

// Ops of the revision's resources.
const (
	Unchanged Op = iota
	Create       // a new identity
	Update       // a new spec, or a row being deleted or kept orphaned that comes back: a new generation
	Relabel      // new metadata only: no new generation, no reconcile
)

// Step is what happens to one resource of the revision.
type Step struct {
	Op Op
	// Applied is the index of the applied resource it rewrites (-1 for Create).
	Applied int
	// Restored: the applied row was being deleted.
	Restored bool
	// Requested: a Relabel whose trueup.dev/reconcile-requested-at changed runs it now.
	Requested bool
}

// Guard is the prune guard's decision: Reason names the guard that stops every deletion
// ("EmptySource", "EmptyRender", "TooManyDeletions"; "" when the deletions go ahead) and
// Message says why, with the numbers.
type Guard struct{ Reason, Message string }

// Changes is what applying a revision would change.
type Changes struct {
	// Steps[i] is what happens to the revision's resource i.
	Steps []Step
	// Gone are the applied resources (indexes, in applied order) whose manifests are gone
	// and which pruning would delete; they are deleted only when Guard lets them.
	Gone []int
	// Orphan are those whose manifests are gone and which are kept (the source does not
	// prune, or trueup.dev/prune: disabled); rows kept earlier are not listed again.
	Orphan []int
	Guard  Guard
	Counts Counts
}

// Counts count a plan's resources. Active is the applied resources not being deleted, the
// base of the share guard.
type Counts struct {
	Created, Updated, Relabelled, Requested, Unchanged int
	Deleted, Orphaned, Active                          int
}

// Deleted are the applied resources to mark for deletion: Gone, unless the guard refuses.
func (c *Changes) Deleted() []int {
	if c.Guard.Reason != "" {
		return nil
	}
	return c.Gone
}

// Plan compares rev with the source's applied resources and decides, under the source's
// prune settings, what applying it changes.
func Plan(rev Revision, applied []Applied, prune Prune) Changes {
	byID := make(map[string]int, len(applied))
	for i := range applied {
		byID[identity(&applied[i].Resource)] = i
	}
	seen := make([]bool, len(applied))
	n, at := rev.resources()
	out := Changes{Steps: make([]Step, n)}
	for i := range n {
		r := at(i)
		j, ok := -1, false
		if len(byID) > 0 { // a first sync has nothing applied: no identity to look up
			j, ok = byID[identity(&r)]
		}
		if !ok {
			out.Steps[i] = Step{Op: Create, Applied: -1}
			out.Counts.Created++
			continue
		}
		seen[j] = true
		a := &applied[j]
		switch {
		case a.Spec != r.Spec || a.Deleting || a.Orphaned:
			out.Steps[i] = Step{Op: Update, Applied: j, Restored: a.Deleting}
			out.Counts.Updated++
		case a.Meta != r.Meta:
			req := r.RequestedAt != "" && r.RequestedAt != a.RequestedAt
			out.Steps[i] = Step{Op: Relabel, Applied: j, Requested: req}
			out.Counts.Relabelled++
			if req {
				out.Counts.Requested++
			}
		default:
			out.Steps[i] = Step{Op: Unchanged, Applied: j}
			out.Counts.Unchanged++
		}
	}
	for j := range applied {
		a := &applied[j]
		if a.Deleting {
			continue
		}
		out.Counts.Active++
		if seen[j] || a.Orphaned {
			continue
		}
		if !prune.Enabled || a.Keep {
			out.Orphan = append(out.Orphan, j)
		} else {
			out.Gone = append(out.Gone, j)
		}
	}
	out.Counts.Orphaned = len(out.Orphan)
	out.Guard.Reason, out.Guard.Message = PruneGuard(rev.Subject, rev.NoManifests, n, len(out.Gone), out.Counts.Active,
		prune.MaxFraction, prune.AllowEmpty)
	out.Counts.Deleted = len(out.Deleted())
	return out
}

// identity is namespace/kind/name with the kind in lower case (kinds are ASCII).
func identity(r *Resource) string {
	return r.Namespace + "/" + strings.ToLower(r.Kind) + "/" + r.Name
}

// PruneGuard decides whether a revision rendering rendered resources may delete gone of the
// source's active ones: it names the guard that stops every deletion ("EmptySource",
// "EmptyRender", "TooManyDeletions") and says why, with the numbers, or returns "" when the
// deletions go ahead. noManifests says the revision's snapshot holds no manifest file at all
// (an empty or unmounted folder, a path emptied by mistake): a failure produces exactly that,
// so such a revision never deletes anything, whatever the settings say. maxFrac is
// prune.maxFraction (0: DefaultMaxFraction; 1 turns the share guard off). allowEmpty is
// prune.allowEmpty: a revision that renders no resource but still holds a manifest file (an
// empty YAML file, a file of ResourceTypes) deletes everything it removed, whatever maxFrac
// says (such a revision always removes the whole source, so the share guard would refuse it
// every time: the opt-in is the consent to exactly that). A revision that still renders
// something is guarded by maxFrac alone. Previews report what it decides about a pull
// request as a warning. subject names the revision in the message (Revision.Subject).
func PruneGuard(subject string, noManifests bool, rendered, gone, active int, maxFrac float64, allowEmpty bool) (reason, message string) {
	maxFrac = MaxFraction(maxFrac)
	switch {
	case gone == 0:
	case noManifests:
		return "EmptySource", fmt.Sprintf("%s holds no manifest file: not deleting the source's %s (a source without any manifest file never prunes; "+
			"to remove every resource on purpose keep one manifest file, e.g. an empty .yaml file, and set prune.allowEmpty)", subject, plural.Count(active, "resource", "resources"))
	case rendered == 0 && allowEmpty:
	case rendered == 0:
		return "EmptyRender", fmt.Sprintf("%s renders no resources: not deleting the source's %s (an empty render is refused unless prune.allowEmpty is true)", subject, plural.Count(active, "resource", "resources"))
	case maxFrac < 1 && float64(gone) > maxFrac*float64(active):
		return "TooManyDeletions", fmt.Sprintf("%s would delete %d of %s (more than prune.maxFraction %.2f): nothing deleted", subject, gone, plural.Count(active, "resource", "resources"), maxFrac)
	}
	return "", ""
}

// Type is a ResourceType on either side of a plan.
type Type struct {
	// Name is what types are matched by (the caller chooses: as declared, or in lower case).
	Name string
	// Spec fingerprints the declaration, as Resource.Spec does a spec.
	Spec string
}

// TypeChanges is what applying a revision would change of the source's types.
type TypeChanges struct {
	// Steps[i] is what happens to the revision's type i: Create, Update or Unchanged, with
	// Applied the index of the applied type it rewrites.
	Steps []Step
	// Removed are the applied types (indexes, in applied order) the revision no longer
	// declares: each goes once no resource of its kind is left.
	Removed []int
	Counts  TypeCounts
}

// TypeCounts count a plan's types.
type TypeCounts struct{ Created, Updated, Unchanged, Removed int }

// PlanTypes compares the revision's types with the source's applied ones.
func PlanTypes(desired, applied []Type) TypeChanges {
	byName := make(map[string]int, len(applied))
	for j, t := range applied {
		byName[t.Name] = j
	}
	declared := make([]bool, len(applied))
	out := TypeChanges{Steps: make([]Step, len(desired))}
	for i, t := range desired {
		j, ok := byName[t.Name]
		switch {
		case !ok:
			out.Steps[i] = Step{Op: Create, Applied: -1}
			out.Counts.Created++
			continue
		case applied[j].Spec != t.Spec:
			out.Steps[i] = Step{Op: Update, Applied: j}
			out.Counts.Updated++
		default:
			out.Steps[i] = Step{Op: Unchanged, Applied: j}
			out.Counts.Unchanged++
		}
		declared[j] = true
	}
	for j := range applied {
		if !declared[j] {
			out.Removed = append(out.Removed, j)
		}
	}
	out.Counts.Removed = len(out.Removed)
	return out
}

// FilesBasis is the key, in the file maps ChangedFiles compares, of what every resource was
// judged with besides its own file (the types known from other sources): a change of it is
// a change of every file.
const FilesBasis = ""

// ChangedFiles decides which files a plan must compare, from the files (path → content hash)
// recorded when the source was last applied and the revision's: those added, changed or
// removed, sorted. A resource of a file whose content is the same is the same resource, so
// the plan of the other files' resources is the revision's whole plan. all is true when every
// resource must be compared: nothing was recorded (a first sync, or one applied without the
// files' hashes), the revision has none, or the basis (FilesBasis) changed.
func ChangedFiles(recorded, revision map[string]string) (changed []string, all bool) {
	if len(recorded) == 0 || revision == nil || recorded[FilesBasis] != revision[FilesBasis] {
		return nil, true
	}
	changed = []string{}
	for p, h := range revision {
		if old, ok := recorded[p]; !ok || old != h {
			changed = append(changed, p)
		}
	}
	for p := range recorded {
		if _, ok := revision[p]; !ok {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	return changed, false
}
