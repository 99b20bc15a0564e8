# An apply that runs until it is interrupted.
variable "size" {}

resource "terraform_data" "slow" {
  input = var.size

  provisioner "local-exec" {
    command = "sleep 3600"
  }
}
