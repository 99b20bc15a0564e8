package auth

import (
	"reflect"
	"testing"

	"github.com/trueup-dev/trueup/internal/policy"
)

func TestCan(t *testing.T) {
	viewerStaging := Identity{Kind: "token", Name: "v", Role: Viewer, Namespaces: []string{"staging"}}
	operatorProd := Identity{Kind: "user", Name: "o", Role: Operator, Namespaces: []string{"production"}}
	adminAll := Identity{Kind: "user", Name: "a", Role: Admin, Namespaces: []string{AllNamespaces}}
	adminProd := Identity{Kind: "token", Name: "ap", Role: Admin, Namespaces: []string{"production"}}
	none := Identity{Kind: "anonymous"}
	cases := []struct {
		id     Identity
		action Action
		ns     string
		want   bool
	}{
		{viewerStaging, Read, "staging", true},
		{viewerStaging, Read, "production", false},
		{viewerStaging, Operate, "staging", false},
		{viewerStaging, Administer, "", false},
		{viewerStaging, Read, "", true}, // a list: filtered to what it sees
		{operatorProd, Operate, "production", true},
		{operatorProd, Operate, "staging", false},
		{operatorProd, Read, "production", true},
		{operatorProd, Administer, "", false},
		{adminAll, Administer, "", true},
		{adminAll, Operate, "anything", true},
		{adminProd, Operate, "production", true},
		{adminProd, Administer, "", false}, // replicas and metrics span every namespace
		{none, Read, "staging", false},
		{none, Read, "", false},
	}
	for _, c := range cases {
		if got := c.id.Can(c.action, c.ns); got != c.want {
			t.Errorf("%s %s/%v Can(%s, %q) = %v, want %v", c.id.Kind, c.id.Role, c.id.Namespaces, c.action, c.ns, got, c.want)
		}
	}
}

func TestActor(t *testing.T) {
	for _, c := range []struct {
		id   Identity
		want string
	}{
		{Identity{Kind: "token", Name: "ci-bot"}, "token:ci-bot"},
		{Identity{Kind: "user", Name: "ada@example.com"}, "user:ada@example.com"},
		{Identity{Kind: "anonymous", Name: "anonymous"}, "anonymous"},
		{Identity{}, "anonymous"},
	} {
		if got := c.id.Actor(); got != c.want {
			t.Errorf("%+v.Actor() = %q, want %q", c.id, got, c.want)
		}
	}
}

func TestApprover(t *testing.T) {
	for _, c := range []struct {
		id   Identity
		want policy.Approver
	}{
		{Identity{Kind: "token", Name: "release-bot", Role: Operator, Email: "x@example.com", Groups: []string{"dba"}}, policy.Approver{Token: "release-bot"}},
		{Identity{Kind: "user", Name: "ada@example.com", Role: Viewer, Email: "ada@example.com", Groups: []string{"dba", "ops"}},
			policy.Approver{User: "ada@example.com", Email: "ada@example.com", Groups: []string{"dba", "ops"}}},
		{Identity{Kind: "user", Name: "ada"}, policy.Approver{User: "ada"}},
		{Identity{Kind: "anonymous", Name: "anonymous", Role: Admin}, policy.Approver{}}, // may approve nothing
	} {
		if got := c.id.Approver(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v.Approver() = %+v, want %+v", c.id, got, c.want)
		}
	}
}
