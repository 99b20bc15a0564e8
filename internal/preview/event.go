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
	// Fork: the head is in another repository than the base (GitHub and Gitea:
	// pull_request.head.repo is not pull_request.base.repo; GitLab: source_project_id is not
	// target_project_id), or the payload does not say. Its plans see no resolved output and
	// run no CI of the repository unless the source's preview config allows it.
	Fork bool
}

// Ref is the ref the forge keeps the pull request's head under.
func (e Event) Ref() string {
	if e.Provider == ProviderGitLab {
		return "refs/merge-requests/" + strconv.Itoa(e.Number) + "/head"
	}
	return "refs/pull/" + strconv.Itoa(e.Number) + "/head"
}
