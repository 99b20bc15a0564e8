# Built-in resources only: no provider is ever downloaded.
variable "size" {
  type = number
}

resource "terraform_data" "db" {
  input = {
    size = var.size
  }
}

output "size" {
  value = terraform_data.db.output.size
}
