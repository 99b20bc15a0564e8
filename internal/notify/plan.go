package notify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/trueup-dev/trueup/internal/clip"
	"github.com/trueup-dev/trueup/internal/labelsel"
)

// Rule selects events for its providers; empty lists match everything.
type Rule struct {
	Name       string
	Providers  []string
	Events     []string
	Sources    []string
	Namespaces []string
	Kinds      []string
	Selector   []labelsel.Requirement
	// Template, when set, renders the message text from a Message.
	Template *template.Template
}

// Item is one outbox entry as the sender sees it.
type Item struct {
	ID                            int64
	Event                         string
	Namespace, Kind, Name, Source string
	Revision                      string
	Labels                        map[string]string
	Phase, Message                string
	CreatedAt                     time.Time
	Attempts                      int
	Done                          []string // targets already delivered
	// Deliveries maps a target to the delivery id of a message about this item that was
	// sent (or tried) to it and is not delivered yet: a retry rebuilds that message.
	Deliveries map[string]string
}

// Matches reports whether the rule selects the item.
func (r Rule) Matches(it Item) bool {
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	return in(r.Events, it.Event) && in(r.Sources, it.Source) && in(r.Namespaces, it.Namespace) &&
		(len(r.Kinds) == 0 || slices.ContainsFunc(r.Kinds, func(k string) bool { return strings.EqualFold(k, it.Kind) })) &&
		labelsel.Matches(r.Selector, it.Labels)
}

// Target names one rule's provider: what an item's Done records.
func Target(rule, provider string) string { return rule + "/" + provider }

// Batch is one message to send: items of one target, event and revision.
type Batch struct {
	Rule     *Rule
	Provider string
	Event    string
	Revision string
	Items    []Item
	// ID is the delivery id recorded before the message's first send (empty: not sent yet;
	// DeliveryID computes it).
	ID string
}

// Target is the batch's rule/provider.
func (b Batch) Target() string { return Target(b.Rule.Name, b.Provider) }

// DeliveryID is the message's id, which receivers use to drop repeats: ID once the message
// was tried (the sender records it on the entries before the first send, and a retry
// rebuilds the message from them), else a digest of the target, the event, the revision and
// the outbox entries (id and creation time) the message is about. The creation times keep
// two installations that write to one receiver from sharing ids.
func (b Batch) DeliveryID() string {
	if b.ID != "" {
		return b.ID
	}
	ids := make([]string, len(b.Items))
	for i, it := range b.Items {
		ids[i] = fmt.Sprintf("%d@%d", it.ID, it.CreatedAt.UnixMicro())
	}
	slices.Sort(ids)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", b.Target(), b.Event, b.Revision)
	for _, id := range ids {
		fmt.Fprintf(h, "\x00%s", id)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// maxHoldFactor bounds how long a burst that keeps growing is held: window times this.
const maxHoldFactor = 10

// Plan turns due items into messages: every (rule, provider) an item matches and has not had
// yet. A message already tried (items whose Deliveries name an id for the target) comes first
// and is rebuilt as it was: the items that carry that id, under that id, never held, whatever
// arrived meanwhile (those of its items that are due: a subset is still that message, since
// whatever a receiver accepted under the id was about all of them). The others are grouped by target, event and revision; a group is held
// back while it is still growing (its newest item younger than window), for at most
// maxHoldFactor windows, so that a burst goes out as one message; window ≤ 0 sends every item
// alone at once. held lists the items of held groups; an item that matches nothing is in no
// batch (the caller finishes it).
func Plan(items []Item, rules []Rule, now time.Time, window time.Duration) (batches []Batch, held []int64) {
	type key struct{ target, event, revision, id string }
	index := map[key]int{}
	var all, retries []Batch
	for _, it := range items {
		for ri := range rules {
			r := &rules[ri]
			if !r.Matches(it) {
				continue
			}
			for _, p := range r.Providers {
				t := Target(r.Name, p)
				if slices.Contains(it.Done, t) {
					continue
				}
				if id := it.Deliveries[t]; id != "" {
					k := key{target: t, id: id}
					i, ok := index[k]
					if !ok {
						i = len(retries)
						index[k] = i
						retries = append(retries, Batch{Rule: r, Provider: p, Event: it.Event, Revision: it.Revision, ID: id})
					}
					retries[i].Items = append(retries[i].Items, it)
					continue
				}
				k := key{target: t, event: it.Event, revision: it.Revision}
				if window <= 0 || it.Revision == "" {
					k.revision = fmt.Sprintf("%s#%d", it.Revision, it.ID) // never grouped
				}
				i, ok := index[k]
				if !ok {
					i = len(all)
					index[k] = i
					all = append(all, Batch{Rule: r, Provider: p, Event: it.Event, Revision: it.Revision})
				}
				all[i].Items = append(all[i].Items, it)
			}
		}
	}
	batches = retries
	for _, b := range all {
		if window > 0 {
			oldest, newest := b.Items[0].CreatedAt, b.Items[0].CreatedAt
			for _, it := range b.Items {
				oldest, newest = minTime(oldest, it.CreatedAt), maxTime(newest, it.CreatedAt)
			}
			if now.Sub(newest) < window && now.Sub(oldest) < maxHoldFactor*window {
				for _, it := range b.Items {
					if !slices.Contains(held, it.ID) {
						held = append(held, it.ID)
					}
				}
				continue
			}
		}
		batches = append(batches, b)
	}
	return batches, held
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Message is what a provider shapes into its own format (and what templates see).
type Message struct {
	// ID is the delivery id (Batch.DeliveryID), the same on every retry of the message.
	ID                            string
	Title                         string
	Event                         string
	Rule                          string
	Resource                      string // namespace/kind/name, or the source for a source's event
	Namespace, Kind, Name, Source string
	Phase                         string
	Message                       string
	Revision                      string
	URL                           string // the dashboard page
	// Count is how many resources the message is about; Resources names them (at most 20).
	Count     int
	Resources []string
	// Text is the body: the rule's template, or a default.
	Text string
}

// maxListed bounds the resources a grouped message names.
const maxListed = 20

// Compose builds the message of a batch; externalURL is the dashboard's base URL.
func Compose(b Batch, externalURL string) (Message, error) {
	first := b.Items[0]
	m := Message{ID: b.DeliveryID(), Event: b.Event, Rule: b.Rule.Name, Namespace: first.Namespace, Kind: first.Kind, Name: first.Name,
		Source: first.Source, Phase: first.Phase, Message: first.Message, Revision: b.Revision, Count: len(b.Items)}
	for _, it := range b.Items {
		if len(m.Resources) < maxListed {
			m.Resources = append(m.Resources, identity(it))
		}
	}
	base := strings.TrimSuffix(externalURL, "/")
	if len(b.Items) == 1 {
		m.Resource = identity(first)
		m.Title = fmt.Sprintf("%s: %s", b.Event, m.Resource)
		switch {
		case first.Kind == "Source" && first.Namespace == "":
			m.URL = base + "/sources/" + url.PathEscape(first.Source)
		default:
			m.URL = base + "/resources/" + url.PathEscape(first.Namespace) + "/" + url.PathEscape(first.Kind) + "/" + url.PathEscape(first.Name)
		}
	} else {
		m.Resource = fmt.Sprintf("%d resources", len(b.Items))
		m.Title = fmt.Sprintf("%d resources %s on revision %s", len(b.Items), verb(b.Event), Short(b.Revision))
		m.URL = base + "/resources"
		sort.Strings(m.Resources)
	}
	if base == "" {
		m.URL = ""
	}
	if b.Rule.Template != nil {
		var sb strings.Builder
		if err := b.Rule.Template.Execute(&sb, m); err != nil {
			return m, fmt.Errorf("rule %s template: %w", b.Rule.Name, err)
		}
		m.Text = sb.String()
		return m, nil
	}
	m.Text = defaultText(m)
	return m, nil
}

func identity(it Item) string {
	if it.Kind == "Source" && it.Namespace == "" {
		return "source " + it.Source
	}
	return it.Namespace + "/" + it.Kind + "/" + it.Name
}

func verb(event string) string {
	switch event {
	case Failed:
		return "failed"
	case Stalled:
		return "stalled"
	case Recovered:
		return "recovered"
	case Deleted:
		return "were deleted"
	case Abandoned:
		return "were abandoned"
	case Drifted:
		return "drifted"
	case ApprovalRequired:
		return "wait for approval"
	case Approved:
		return "were approved"
	case Rejected:
		return "were rejected"
	case PolicyDenied:
		return "were denied by a policy"
	}
	return event
}

func defaultText(m Message) string {
	var b strings.Builder
	b.WriteString(m.Title)
	if m.Count == 1 {
		if m.Phase != "" {
			fmt.Fprintf(&b, "\nPhase: %s", m.Phase)
		}
		if m.Message != "" {
			fmt.Fprintf(&b, "\n%s", m.Message)
		}
		if m.Event == ApprovalRequired {
			fmt.Fprintf(&b, "\nApprove: trueup approve %s (or reject: trueup reject %[1]s)", m.Resource)
		}
	} else {
		fmt.Fprintf(&b, "\n%s", strings.Join(m.Resources, ", "))
		if m.Count > len(m.Resources) {
			fmt.Fprintf(&b, " and %d more", m.Count-len(m.Resources))
		}
	}
	if m.Revision != "" {
		fmt.Fprintf(&b, "\nRevision: %s", Short(m.Revision))
	}
	if m.URL != "" {
		fmt.Fprintf(&b, "\n%s", m.URL)
	}
	return b.String()
}

// Short is a revision as messages show it.
func Short(rev string) string { return clip.Rev(rev) }

// Backoff is the wait before attempt+1 after attempt failed: retryAfter when the provider
// named one (at most an hour), else 1s doubling up to 5m.
func Backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, time.Hour)
	}
	d := time.Second
	for i := 1; i < attempt && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// Verdict is what becomes of an item after an attempt.
type Verdict struct {
	State string // pending, sent or dead (the store's outbox states)
	Wait  time.Duration
}

// Decide is an item's state after an attempt: sent when no target is missing, dead once
// attempts reached max, else pending again after Backoff.
func Decide(missing bool, attempts, max int, retryAfter time.Duration) Verdict {
	switch {
	case !missing:
		return Verdict{State: "sent"}
	case attempts >= max:
		return Verdict{State: "dead"}
	}
	return Verdict{State: "pending", Wait: Backoff(attempts, retryAfter)}
}
