#!/usr/bin/env bash
# Builds the simulator and its tests (CPU targets only: no CUDA harness, no benchmarks) with
# AddressSanitizer and UndefinedBehaviorSanitizer in build-sanitize/ (scripts/configure_sanitized.sh)
# and runs the whole test suite there (issue 11 §3). Any sanitizer report fails the run: ASan
# aborts, UBSan halts on the first error (no recovery), LeakSanitizer is on. Exits with ctest's
# status.
# Usage: scripts/sanitize.sh [extra ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-sanitize
bash scripts/configure_sanitized.sh
cmake --build "$build" -j"$(nproc)"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export HOSTILE_TIMEOUT_S=300   # tests/hostile_inputs.sh: its 30 s per case is for the Release build
# The heavy property tests run at most this many configurations each instead of all of them
# (tests/property_sample.hpp; the normal run keeps all of them and every assertion).
export CHUNKFLOW_PROPERTY_CONFIGS="${CHUNKFLOW_PROPERTY_CONFIGS:-20}"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
