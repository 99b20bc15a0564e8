# The hash's tests: cmd reaches no resource or output, only a provisioner's command; pw is a
# secret the spec reveals, set on a resource and an output.
variable "cmd" {
  type = string
}

variable "pw" {
  type    = string
  default = ""
}

resource "terraform_data" "run" {
  input = "run"

  provisioner "local-exec" {
    command = var.cmd
  }
}

resource "terraform_data" "secret" {
  input = { pw = var.pw, size = 1 }
}

output "pw" {
  value     = var.pw
  sensitive = true
}
