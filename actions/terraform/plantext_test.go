package terraform

import "testing"

func TestPlanText(t *testing.T) {
	t.Parallel()
	out := `Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
  + create
  ~ update in-place
-/+ destroy and then create replacement

Terraform will perform the following actions:

  # aws_db_instance.main will be updated in-place
  ~ resource "aws_db_instance" "main" {
      ~ password = "hunter2-old" -> "hunter2-new"
        user_data = <<-EOT
  # x will be created
        EOT
    }

  # random_id.x must be replaced
-/+ resource "random_id" "x" {
      ~ keepers = { # forces replacement
          ~ "k" = "a" -> "b"
        }
    }

Plan: 0 to add, 1 to change, 0 to destroy.

Changes to Outputs:
  ~ url = "postgres://a" -> "postgres://b"
  + extra = (known after apply)
`
	want := `Terraform will perform the following actions:
  # aws_db_instance.main will be updated in-place
  # random_id.x must be replaced

Plan: 0 to add, 1 to change, 0 to destroy.

Changes to Outputs:
  ~ url
  + extra`
	if got := planText(out); got != want {
		t.Fatalf("planText =\n%s\nwant\n%s", got, want)
	}
}
