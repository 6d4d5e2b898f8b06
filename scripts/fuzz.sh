#!/usr/bin/env bash
# Fuzzes every parser of user input (issue 11 §2): builds the libFuzzer harnesses of fuzz/ with
# clang, ASan and UBSan in build-sanitize/, then runs each for SECONDS (default 60) from a corpus
# seeded with the repository's own files (fuzz/seeds/<target>/, scenarios/, fuzz/regressions/).
# Exits non-zero on any crash, leak, timeout or sanitizer report, and keeps the reproducer in
# build-sanitize/artifacts/<target>/ (copy it to fuzz/regressions/<target>/ to make it a test: the
# normal build replays every file there, tests fuzz_replay_*).
# Prints, per target, the inputs executed and the mean executions per second (libFuzzer's final
# stats). An input running longer than FUZZ_TIMEOUT seconds (default 30) counts as a hang. Under
# nice -n 19 on a loaded machine a starved fuzzer flagged inputs that run in 4-44 ms as 30 s
# timeouts (2026-11-23, load 8 on 2 cores): use FUZZ_TIMEOUT=120 there.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]      (FUZZ_RUNS=N runs N inputs per target instead)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
build=build-sanitize   # shared with scripts/sanitize.sh (scripts/configure_sanitized.sh)
bash scripts/configure_sanitized.sh || exit 1
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" > "$build/fuzz-build.log" 2>&1 \
  || { tail -50 "$build/fuzz-build.log"; echo "fuzz: build failed"; exit 1; }

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=0
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"; artifacts="$build/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  seeds=("fuzz/seeds/$t" "fuzz/regressions/$t")
  [ "$t" = fuzz_scenario ] && seeds+=(scenarios)
  existing=(); for s in "${seeds[@]}"; do [ -d "$s" ] && existing+=("$s"); done
  limit=(-max_total_time="$seconds"); [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  log="$build/$t.log"
  start_s=$(date +%s)
  "$build/$t" "$corpus" "${existing[@]}" "${limit[@]}" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb=2048 \
    -max_len=65536 -artifact_prefix="$artifacts/" -print_final_stats=1 > "$log" 2>&1
  rc=$?
  wall_s=$(( $(date +%s) - start_s ))
  # Final stats when libFuzzer ends normally; after a crash, the last "#N" status line.
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  [ -z "$execs" ] && execs=$(grep -o '^#[0-9]*' "$log" | tr -d '#' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  if [ $rc -ne 0 ]; then
    failed=$((failed + 1))
    echo "fuzz: $t FAILED (exit $rc) after ${execs:-?} inputs in ${wall_s} s; reproducer(s):"
    ls -1 "$artifacts"/* 2> /dev/null | sed 's/^/  /'
    grep -m1 -E 'ERROR: |runtime error|unexpected ' "$log" | sed 's/^/  /'
  else
    echo "fuzz: $t ok, ${execs:-?} inputs in ${wall_s} s (${rate:-?} exec/s), corpus $(ls "$corpus" | wc -l) files"
  fi
done
exit $((failed > 0))
