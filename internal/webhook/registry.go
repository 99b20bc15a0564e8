package webhook

import (
	"encoding/json"
	"errors"
	"strings"
)

// registryPush is what a container registry's notification says was pushed to the
// repository of an OCI source. Two shapes are read: the distribution (Docker, CNCF
// distribution, GitLab) notification envelope, {"events":[{"action":"push","target":
// {"repository","tag","mediaType"}}]}, and Harbor's {"type":"PUSH_ARTIFACT","event_data":
// {"repository":{"repo_full_name"},"resources":[{"tag"}]}}. The digest a payload names is
// never used: the push only makes the source check its tag.
type registryPush struct {
	// Events is the distribution envelope.
	Events []struct {
		ID     string `json:"id"`
		Action string `json:"action"`
		Target struct {
			MediaType  string `json:"mediaType"`
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"target"`
	} `json:"events"`
	// Type and EventData are Harbor's.
	Type      string `json:"type"`
	EventData struct {
		Repository struct {
			RepoFullName string `json:"repo_full_name"`
		} `json:"repository"`
		Resources []struct {
			Tag string `json:"tag"`
		} `json:"resources"`
	} `json:"event_data"`
}

// parseRegistryPush decodes a registry notification.
func parseRegistryPush(body []byte) (registryPush, error) {
	var p registryPush
	if err := json.Unmarshal(body, &p); err != nil {
		return p, errors.New("invalid JSON registry notification")
	}
	return p, nil
}

// matches reports whether the notification is a push of a manifest to repository, of tag
// when tag is set (any tag otherwise: a semver range or a pinned digest), and the tag pushed.
// Blob pushes, pulls, deletions and other repositories do not match.
func (p registryPush) matches(repository, tag string) (string, bool) {
	for _, ev := range p.Events {
		t := ev.Target
		manifest := t.Tag != "" || strings.Contains(t.MediaType, "manifest")
		if ev.Action == "push" && manifest && t.Repository == repository && (tag == "" || t.Tag == tag) {
			return t.Tag, true
		}
	}
	if p.Type == "PUSH_ARTIFACT" && p.EventData.Repository.RepoFullName == repository {
		for _, r := range p.EventData.Resources {
			if tag == "" || r.Tag == tag {
				return r.Tag, true
			}
		}
	}
	return "", false
}
