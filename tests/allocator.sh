#!/usr/bin/env bash
# The chunkflow program's allocator (CMakeLists.txt CHUNKFLOW_JEMALLOC, sim/chunkflow_main.cpp
# malloc_conf): the statically linked jemalloc is the one that serves the program's allocations and
# it runs with the options the README's Speed section measured (freed pages kept, one arena for
# every thread, no transparent huge pages asked for), not its defaults. jemalloc prints its options
# with its statistics at exit when MALLOC_CONF asks for them (on stderr; the program's own output is
# unchanged).
# Usage: tests/allocator.sh path/to/chunkflow
set -euo pipefail
bin="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
MALLOC_CONF=stats_print:true "$bin" node list > "$tmp/out" 2> "$tmp/stats"
"$bin" node list > "$tmp/plain"
cmp -s "$tmp/out" "$tmp/plain" || { echo "FAIL: the statistics changed the program's output"; exit 1; }
status=0
expect() {  # expect LABEL PATTERN...: the statistics show one of the patterns
  local label="$1"; shift
  for want in "$@"; do
    if grep -qF "$want" "$tmp/stats"; then echo "ok: $want"; return; fi
  done
  echo "FAIL: jemalloc's statistics do not show $label ($*)"
  status=1
}
# No huge pages asked for (sim/chunkflow_main.cpp: on a VM that reports free 2 MiB blocks to its
# host they cost a run started after a pause twice its time): jemalloc leaves the choice to the
# kernel's THP mode ("default"; "not supported" where the kernel offers no THP switch: some
# containers, gVisor, WSL1) and keeps its metadata off huge pages.
expect "no huge pages asked for the arenas" 'opt.thp: "default"' 'opt.thp: "not supported"'
expect "no huge pages asked for the metadata" 'opt.metadata_thp: "disabled"'
expect "freed pages kept" 'opt.dirty_decay_ms: -1'
expect "freed pages kept" 'opt.muzzy_decay_ms: -1'
expect "one arena for every thread" 'opt.narenas: 1'
# Its arenas served the program: the bytes allocated at exit are counted ("Allocated: N, active: ...").
grep -qE '^Allocated: [1-9]' "$tmp/stats" || { echo "FAIL: jemalloc reports no allocated bytes"; status=1; }
exit $status
