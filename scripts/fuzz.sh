#!/usr/bin/env bash
# Fuzzes every parser of user input (issue 11 §2): builds the libFuzzer harnesses of fuzz/ with
# clang, ASan and UBSan in build-fuzz/, then runs each for SECONDS (default 60) from a corpus
# seeded with the repository's own files (fuzz/seeds/<target>/, scenarios/, fuzz/regressions/).
# Exits non-zero on any crash, leak, timeout or sanitizer report, and keeps the reproducer in
# build-fuzz/artifacts/<target>/ (copy it to fuzz/regressions/<target>/ to make it a test: the
# normal build replays every file there, tests fuzz_replay_*).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]      (FUZZ_RUNS=N runs N inputs per target instead)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
build=build-fuzz
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
launcher=(); command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCHUNKFLOW_FUZZ=ON \
  -DCHUNKFLOW_TESTS=OFF -DCHUNKFLOW_BENCH=OFF -DCHUNKFLOW_CUDA=OFF "${launcher[@]}" > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; echo "fuzz: configure failed"; exit 1; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" > "$build.build.log" 2>&1 \
  || { tail -50 "$build.build.log"; echo "fuzz: build failed"; exit 1; }

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
  "$build/$t" "$corpus" "${existing[@]}" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 > "$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  if [ $rc -ne 0 ]; then
    failed=$((failed + 1))
    echo "fuzz: $t FAILED (exit $rc) after ${execs:-?} inputs; reproducer(s):"
    ls -1 "$artifacts"/* 2> /dev/null | sed 's/^/  /'
    grep -m1 -E 'ERROR: |runtime error|unexpected ' "$log" | sed 's/^/  /'
  else
    echo "fuzz: $t ok, ${execs:-?} inputs, corpus $(ls "$corpus" | wc -l) files"
  fi
done
exit $((failed > 0))
