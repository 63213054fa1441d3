# docker-bake.hcl — the image build reads its pins from variables; atompin fills them.
#
#   atompin export --pair atom-0.1.5+vllm-0.31 --format bake -o atompin.bake.json
#   docker buildx bake -f docker-bake.hcl -f atompin.bake.json atom-vllm
#
# The later file wins, so the lock's pins replace these defaults. An environment
# variable of the same name would win over both: `atompin verify --bake` warns.
variable "ATOM_REPO" { default = "https://github.com/ROCm/ATOM" }
variable "ATOM_REF" { default = "v0.1.5" }
variable "ATOM_COMMIT" { default = "" }
variable "VLLM_REPO" { default = "https://github.com/vllm-project/vllm" }
variable "VLLM_REF" { default = "v0.31.0" }
variable "VLLM_COMMIT" { default = "" }
variable "AITER_REF" { default = "v0.1.9" }
variable "ATOMPIN_PAIR" { default = "atom-0.1.5+vllm-0.31" }
variable "ATOMPIN_VERDICT" { default = "" }

target "atom-vllm" {
  dockerfile = "Dockerfile.atom-vllm"
  args = {
    ATOM_REPO   = "${ATOM_REPO}"
    # Clone by commit: a layer cached on a ref string never rebuilds when the ref moves.
    ATOM_COMMIT = "${ATOM_COMMIT}"
    VLLM_REF    = "${VLLM_REF}"
    AITER_REF   = "${AITER_REF}"
  }
  tags = ["atom-vllm:${ATOMPIN_PAIR}"]
}
