# The gate's tests: input changes update in place, major replaces, replicas add or destroy.
# Built-in resources only: no provider is ever downloaded.
variable "size" {
  type = number
}

variable "major" {
  type    = number
  default = 1
}

variable "replicas" {
  type    = number
  default = 0
}

resource "terraform_data" "db" {
  input            = { size = var.size }
  triggers_replace = var.major
}

resource "terraform_data" "replica" {
  count = var.replicas
  input = var.size
}

output "size" {
  value = terraform_data.db.output.size
}
