# A stand-in for a real bucket: terraform_data is built into Terraform and OpenTofu, so this
# module needs no provider download and no cloud account, yet it has a real plan, state and
# outputs. Swap it for an aws_s3_bucket (and its provider) to manage a real one.
resource "terraform_data" "bucket" {
  input = {
    name       = var.name
    region     = var.region
    versioning = var.versioning
    log_bucket = var.log_bucket
  }
}
