package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trueup-dev/trueup/internal/changeplan"
	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/internal/specdiff"
	"github.com/trueup-dev/trueup/internal/wire"
)

// What `trueup diff` finds: DIR's types and resources compared with the server's by the
// apply's change plan, as lines of the diff.

// diffTypes compares DIR's types with the source's by the apply's change plan
// (changeplan.PlanTypes), by name in lower case and by their specs as the diffs show them; a
// type another source declares makes the revision invalid.
func (p *DiffPlan) diffTypes(set *manifest.Set, live []wire.ResourceType) {
	byName := map[string]wire.ResourceType{}
	var mine []wire.ResourceType
	var applied []changeplan.Type
	for _, t := range live {
		byName[strings.ToLower(t.Name)] = t
		if t.Source == p.source.Name {
			mine = append(mine, t)
			applied = append(applied, changeplan.Type{Name: strings.ToLower(t.Name), Spec: fingerprint(t.Spec)})
		}
	}
	p.typesCompared = len(set.Types) > 0
	var desired []changeplan.Type
	var declared []*manifest.ResourceType
	for i := range set.Types {
		t := &set.Types[i]
		if old, ok := byName[strings.ToLower(t.Name)]; ok && old.Source != p.source.Name {
			p.invalid = append(p.invalid, manifest.ValidationError{File: t.File, Line: t.Line, Path: "metadata.name",
				Msg: fmt.Sprintf("ResourceType %s is already declared by source %s (%s)", t.Name, old.Source, old.Path)})
			continue
		}
		desired = append(desired, changeplan.Type{Name: strings.ToLower(t.Name), Spec: fingerprint(t.Spec)})
		declared = append(declared, t)
	}
	plan := changeplan.PlanTypes(desired, applied)
	for i, st := range plan.Steps {
		t := declared[i]
		where := fmt.Sprintf("%s:%d", t.File, t.Line)
		switch st.Op {
		case changeplan.Create:
			p.add(change{op: '+', id: "ResourceType/" + t.Name, where: where})
		case changeplan.Update:
			old := mine[st.Applied]
			d := jsonDiff(old.Spec, t.Spec, "spec at "+revLabel(p.source.Name, old.Revision), "spec in "+t.File)
			p.add(change{op: '~', id: "ResourceType/" + t.Name, where: where, diff: d})
		default:
			p.unchangedTypes++
		}
	}
	if len(set.Types) == 0 {
		return // DIR holds resources only: the source's types stay as they are
	}
	for _, j := range plan.Removed {
		t := mine[j]
		p.add(change{op: '-', id: "ResourceType/" + t.Name, where: t.Path, note: "removed once no resource of its kind is left"})
	}
}

func (p *DiffPlan) add(c change) {
	if !strings.HasPrefix(c.id, "ResourceType/") {
		c.order = 1
	}
	p.changes = append(p.changes, c)
}

// diffResources compares DIR's resources with the source's live ones by the apply's change
// plan (changeplan.Plan) and returns those that would be created. Spec and metadata are
// compared as their diffs show them (canonical JSON); a resource only moved to another file
// is listed too, though the apply leaves it as it is. An orphaned row (kept by an earlier
// revision) is no deletion and no part of the guard's share, as in the apply.
func (p *DiffPlan) diffResources(dir string, set *manifest.Set, live []wire.Resource, prune wire.SourcePrune, noManifests bool) ([]*manifest.Resource, error) {
	desired := make([]changeplan.Resource, len(set.Resources))
	newMeta := make([]json.RawMessage, len(set.Resources))
	for i := range set.Resources {
		r := &set.Resources[i]
		m, err := metaJSON(r.APIVersion, r.Labels, r.Annotations, dependsOn(r.DependsOn))
		if err != nil {
			return nil, err
		}
		newMeta[i] = m
		desired[i] = changeplan.Resource{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Spec: fingerprint(r.Spec), Meta: fingerprint(m)}
	}
	applied := make([]changeplan.Applied, len(live))
	oldMeta := make([]json.RawMessage, len(live))
	for i, r := range live {
		m, err := metaJSON(r.APIVersion, r.Metadata.Labels, r.Metadata.Annotations, liveDependsOn(r.DependsOn))
		if err != nil {
			return nil, err
		}
		oldMeta[i] = m
		applied[i] = changeplan.Applied{Resource: changeplan.Resource{Namespace: r.Metadata.Namespace, Kind: r.Kind, Name: r.Metadata.Name,
			Spec: fingerprint(r.Spec), Meta: fingerprint(m)},
			Deleting: r.Metadata.DeletionTimestamp != nil, Keep: r.Metadata.Annotations["trueup.dev/prune"] == "disabled", Orphaned: r.Status.Orphaned}
	}
	plan := changeplan.Plan(changeplan.Revision{Subject: "folder " + dir, NoManifests: noManifests, Resources: desired}, applied,
		changeplan.Prune{Enabled: prune.Enabled, MaxFraction: prune.MaxFraction, AllowEmpty: prune.AllowEmpty})
	var added []*manifest.Resource
	for i, st := range plan.Steps {
		r := &set.Resources[i]
		id := r.Kind + "/" + r.Namespace + "/" + r.Name
		where := fmt.Sprintf("%s:%d", r.File, r.Line)
		if st.Op == changeplan.Create {
			added = append(added, r)
			p.add(change{op: '+', id: id, where: where})
			continue
		}
		old := live[st.Applied]
		from := revLabel(p.source.Name, old.Source.Revision)
		spec := jsonDiff(old.Spec, r.Spec, "spec at "+from, "spec in "+r.File)
		meta := jsonDiff(oldMeta[st.Applied], newMeta[i], "metadata at "+from, "metadata in "+r.File)
		moved := ""
		if old.Source.Path != r.File {
			moved = "moved from " + old.Source.Path
		}
		c := change{op: '~', id: id, where: where, diff: append(spec, meta...)}
		switch {
		case st.Restored:
			c.note = fmt.Sprintf("restored: the server is deleting it; generation %d", old.Metadata.Generation+1)
		case st.Op == changeplan.Update:
			c.note = fmt.Sprintf("generation %d → %d", old.Metadata.Generation, old.Metadata.Generation+1)
		case st.Op == changeplan.Relabel:
			c.note = "metadata only: no new generation, no reconcile"
		case moved != "":
			c.note = "no new generation, no reconcile"
		default:
			p.unchanged++
			continue
		}
		if moved != "" {
			c.note = moved + "; " + c.note
		}
		p.add(c)
	}
	for _, j := range append(slices.Clip(plan.Gone), plan.Orphan...) {
		r := live[j]
		c := change{op: '-', id: r.Kind + "/" + r.Metadata.Namespace + "/" + r.Metadata.Name, where: sourceFile(r.Source)}
		if applied[j].Keep {
			c.note = "kept: trueup.dev/prune: disabled"
		}
		p.add(c)
	}
	if g := plan.Guard; g.Reason != "" {
		p.notes = append(p.notes, fmt.Sprintf("note: the server would refuse these deletions (PruneSkipped, %s): %s", g.Reason, g.Message))
	}
	return added, nil
}

// fingerprint is v as its diff shows it: equal fingerprints diff to nothing.
func fingerprint(v json.RawMessage) string {
	return strings.Join(specdiff.PrettyCanonical(v), "\n")
}

// jsonDiff diffs two JSON values pretty-printed in canonical form; nil when they are equal.
func jsonDiff(a, b json.RawMessage, fromLabel, toLabel string) []string {
	return specdiff.JSON(a, b, fromLabel, toLabel, diffContext)
}

// metaJSON is the part of a resource besides its spec that a revision can change, as the
// apply's MetaHash counts it: apiVersion, labels, annotations and, when it has any, the
// dependsOn targets ("Kind/namespace/name", sorted).
func metaJSON(apiVersion string, labels, annotations map[string]string, dependsOn []string) (json.RawMessage, error) {
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	m := map[string]any{"apiVersion": apiVersion, "labels": labels, "annotations": annotations}
	if len(dependsOn) > 0 {
		m["dependsOn"] = dependsOn
	}
	return json.Marshal(m)
}

// dependsOn is a manifest's dependsOn targets, sorted: its explicit dependencies (output
// references are part of the spec).
func dependsOn(deps []manifest.Dependency) []string {
	var out []string
	for _, d := range deps {
		if d.Explicit {
			out = append(out, d.Target.String())
		}
	}
	slices.Sort(out)
	return out
}

// liveDependsOn is a live resource's dependsOn targets as its manifest writes them, sorted
// as dependsOn sorts a manifest's.
func liveDependsOn(deps []wire.Dependency) []string {
	var out []string
	for _, d := range deps {
		if d.Explicit {
			out = append(out, d.Kind+"/"+d.Namespace+"/"+d.Name)
		}
	}
	slices.Sort(out)
	return out
}

func revLabel(source, rev string) string {
	if rev == "" {
		return source
	}
	return source + "@" + ShortRev(rev)
}

func sourceFile(s wire.ResourceSource) string {
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", s.Path, s.Line)
	}
	return s.Path
}
