# Every output becomes status.outputs.<name> of the resource; other resources read them as
# ${{ Bucket/<name>.outputs.<output> }}.

output "arn" {
  value = "arn:aws:s3:::${terraform_data.bucket.output.name}"
}

output "region" {
  value = terraform_data.bucket.output.region
}

output "versioning" {
  value = terraform_data.bucket.output.versioning
}

output "log_bucket" {
  value = terraform_data.bucket.output.log_bucket
}
