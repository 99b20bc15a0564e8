# Each top-level field of a Bucket's spec is one of these variables: keep them and the
# ResourceType's schema (manifests/types/bucket.yaml) in step.

variable "name" {
  type        = string
  description = "The bucket's globally unique name."
}

variable "region" {
  type        = string
  description = "Where the bucket lives."
}

variable "versioning" {
  type        = bool
  default     = false
  description = "Keep every version of every object."
}

variable "log_bucket" {
  type        = string
  default     = ""
  description = "ARN of the bucket that receives this bucket's access logs; empty for none."
}
