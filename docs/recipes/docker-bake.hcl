# docker-bake.hcl — the image build reads its pins from variables; atompin checks and fills them.
#
#   atompin verify --bake docker-bake.hcl --pair atom-0.1.5+vllm-0.31       # these defaults are the lock's pins
#   atompin export --pair atom-0.1.5+vllm-0.31 --format bake -o atompin.bake.json
#   docker buildx bake -f docker-bake.hcl -f atompin.bake.json atom-vllm
#
# The later file wins, so the lock's pins (commits included) replace these defaults. An
# environment variable of the same name wins over both; `atompin verify --bake` judges the
# merged result the same way (give it both files to check exactly what bake builds).

# CHANGE ME: where the image installs atompin from. A pinned source you control: your
# atompin repository at a commit, or a wheel you built from it. Never a bare name.
variable "ATOMPIN_INSTALL" {
  default = "atompin @ git+https://git.example.invalid/your-org/atompin@0000000000000000000000000000000000000000"
}
# A ROCm PyTorch image to build on; pin it by digest in real use.
variable "BASE_IMAGE" { default = "rocm/pytorch:latest" }

variable "ATOM_REPO" { default = "https://github.com/ROCm/ATOM" }
variable "ATOM_REF" { default = "v0.1.5" }
variable "ATOM_COMMIT" { default = "" } # atompin export fills it; empty: build ATOM_REF
variable "VLLM_REPO" { default = "https://github.com/vllm-project/vllm" }
variable "VLLM_REF" { default = "v0.31.0" }
variable "VLLM_COMMIT" { default = "" }
variable "AITER_REPO" { default = "https://github.com/ROCm/aiter" }
variable "AITER_REF" { default = "v0.1.16" }
variable "AITER_COMMIT" { default = "" }
variable "ATOMPIN_PAIR" { default = "atom-0.1.5+vllm-0.31" }
# The pair name as an image tag ("+" is not allowed in a tag): atompin exports it.
variable "ATOMPIN_PAIR_TAG" { default = "atom-0.1.5_vllm-0.31" }

target "atom-vllm" {
  dockerfile = "Dockerfile.atom-vllm"
  args = {
    BASE_IMAGE      = BASE_IMAGE
    ATOMPIN_INSTALL = ATOMPIN_INSTALL
    ATOMPIN_PAIR    = ATOMPIN_PAIR
    # Check out by commit when the lock's pins are given: a layer cached on a ref string
    # never rebuilds when the ref moves. Without them, the ref.
    ATOM_REPO      = ATOM_REPO
    ATOM_CHECKOUT  = notequal("", ATOM_COMMIT) ? ATOM_COMMIT : ATOM_REF
    VLLM_REPO      = VLLM_REPO
    VLLM_CHECKOUT  = notequal("", VLLM_COMMIT) ? VLLM_COMMIT : VLLM_REF
    AITER_REPO     = AITER_REPO
    AITER_CHECKOUT = notequal("", AITER_COMMIT) ? AITER_COMMIT : AITER_REF
  }
  tags = ["atom-vllm:${ATOMPIN_PAIR_TAG}"]
}
