#!/usr/bin/env bash
# Installs the Debian packages ChunkFlow builds with, only those that are missing.
# Idempotent; needs root (apt-get). The CUDA toolkit is optional and never installed here.
set -euo pipefail
packages=(build-essential cmake libeigen3-dev libboost-graph-dev libcli11-dev nlohmann-json3-dev
          catch2 libbenchmark-dev python3-matplotlib
          libjemalloc-dev                       # the chunkflow program's allocator (keeps freed pages)
          clang libclang-rt-14-dev libomp-dev   # clang: libFuzzer harnesses (scripts/fuzz.sh, CI)
          libopenmpi-dev openmpi-bin            # MPI: sweep --grid over ranks (tests: grid_mpi)
          pybind11-dev python3-dev)             # the Python module (tests: python_module)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
