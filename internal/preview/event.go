package preview

import "strconv"

// Providers of pull-request events.
const (
	ProviderGitHub = "github"
	ProviderGitea  = "gitea"
	ProviderGitLab = "gitlab"
)

// Event asks for a preview of one head of one pull (merge) request of a source. The webhook
// handler builds it from a delivery.
type Event struct {
	Source   string
	Provider string // github | gitea | gitlab (Forgejo is gitea)
	Number   int
	HeadSHA  string // lowercase hex
	Title    string
	URL      string // the pull request's page
	Base     string // the branch the pull request would merge into
	Delivery string // the delivery id, for logs
}

// Ref is the ref the forge keeps the pull request's head under.
func (e Event) Ref() string {
	if e.Provider == ProviderGitLab {
		return "refs/merge-requests/" + strconv.Itoa(e.Number) + "/head"
	}
	return "refs/pull/" + strconv.Itoa(e.Number) + "/head"
}
