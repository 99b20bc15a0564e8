package sources

import "testing"

func TestIsManifest(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"a.yaml": true, "a.YML": true, "a.json": true, "dir/b.Json": true,
		// A Terraform module's JSON files are not trueup documents.
		"main.tf.json": false, "modules/db/outputs.TF.JSON": false, "prod.tfvars.json": false,
		"main.tf": false, "a.txt": false, "json": false, "tf.json.yaml": true,
	} {
		if got := IsManifest(name); got != want {
			t.Errorf("IsManifest(%q) = %v, want %v", name, got, want)
		}
	}
}
