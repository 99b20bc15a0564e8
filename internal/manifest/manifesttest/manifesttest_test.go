package manifesttest

import (
	"testing"

	"github.com/trueup-dev/trueup/internal/manifest"
	"github.com/trueup-dev/trueup/sources"
)

func TestTypeDocLoads(t *testing.T) {
	t.Parallel()
	doc := TypeDoc("Queue", "mq.example.com", "{type: object, properties: {size: {type: integer}}}", "noop")
	set, err := manifest.NewLoader().Load([]sources.File{{Path: "types.yaml", Data: []byte(doc)}}, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Types) != 1 {
		t.Fatalf("types %+v", set.Types)
	}
	typ := set.Types[0]
	if typ.Name != "Queue" || typ.Group != "mq.example.com" || typ.Action.Name != "noop" {
		t.Errorf("type %+v", typ)
	}
}
