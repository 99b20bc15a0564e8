# Built-in resources only: no provider is ever downloaded.
variable "size" {
  description = "any type: the conformance suite passes a string, the tests a number"
}

variable "engine" {
  type    = string
  default = "postgres"
}

variable "password" {
  type      = string
  default   = ""
  sensitive = true
}

resource "terraform_data" "db" {
  input = {
    size   = var.size
    engine = var.engine
  }
}

output "size" {
  value = terraform_data.db.output.size
}

output "engine" {
  value = terraform_data.db.output.engine
}

output "id" {
  value = terraform_data.db.id
}

output "password" {
  value     = var.password
  sensitive = true
}
