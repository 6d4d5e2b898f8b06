#!/usr/bin/env bash
# Configures build-sanitize/, the one sanitized build that scripts/sanitize.sh (the test suite
# under ASan + UBSan) and scripts/fuzz.sh (the libFuzzer harnesses) share (issue 11 §2, §3):
# clang, -fsanitize=address,undefined with no recovery, libFuzzer's coverage instrumentation on
# every library (CHUNKFLOW_FUZZ), the CPU targets only (no CUDA harness, no benchmarks, no Python
# module: an ASan-instrumented module cannot be loaded by an uninstrumented python3).
# -O1 -g1 keeps the build light and the reports at file:line. One build serves both scripts, so
# CI compiles the libraries under the sanitizers once, not twice.
# Configure log: build-sanitize/configure.log.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-sanitize
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
launcher=(); command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
mkdir -p "$build"
command -v clang++ > /dev/null || { echo "sanitized build: clang++ not found (scripts/setup.sh installs clang)"; exit 1; }
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCHUNKFLOW_FUZZ=ON -DCHUNKFLOW_TESTS=ON \
  -DCHUNKFLOW_BENCH=OFF -DCHUNKFLOW_CUDA=OFF -DCHUNKFLOW_PYTHON=OFF "${launcher[@]}" > "$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; echo "sanitized build: configure failed"; exit 1; }
