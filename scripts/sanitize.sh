#!/usr/bin/env bash
# Builds the simulator and its tests (no CUDA, no benchmarks) with AddressSanitizer and
# UndefinedBehaviorSanitizer in build-sanitize/ and runs the whole test suite there (issue 11 §3).
# Any sanitizer report fails the run: ASan aborts, UBSan halts on the first error (no recovery),
# LeakSanitizer is on. Exits with ctest's status.
# Usage: scripts/sanitize.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-sanitize
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
launcher=(); command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHUNKFLOW_CUDA=OFF -DCHUNKFLOW_BENCH=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" "${launcher[@]}"
cmake --build "$build" -j"$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
