#!/usr/bin/env bash
# The chunkflow program's allocator (CMakeLists.txt CHUNKFLOW_JEMALLOC, sim/chunkflow_main.cpp
# malloc_conf): the statically linked jemalloc is the one that serves the program's allocations and
# it runs with the options the README's Speed section measured (arenas and metadata on transparent
# huge pages, freed pages kept), not its defaults. jemalloc prints its options with its statistics
# at exit when MALLOC_CONF asks for them (on stderr; the program's own output is unchanged).
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
# Where the kernel offers no transparent huge pages (no sysfs switch: some containers, gVisor, WSL1),
# jemalloc reports them "not supported" and runs on 4 KiB pages; the build is still right.
thp=('opt.thp: "always"'); metadata=('opt.metadata_thp: "always"')
if [ ! -r /sys/kernel/mm/transparent_hugepage/enabled ]; then
  thp+=('opt.thp: "not supported"'); metadata+=('opt.metadata_thp: "not supported"')
fi
expect "huge pages for the arenas" "${thp[@]}"
expect "huge pages for the metadata" "${metadata[@]}"
expect "freed pages kept" 'opt.dirty_decay_ms: -1'
expect "freed pages kept" 'opt.muzzy_decay_ms: -1'
# Its arenas served the program: the bytes allocated at exit are counted ("Allocated: N, active: ...").
grep -qE '^Allocated: [1-9]' "$tmp/stats" || { echo "FAIL: jemalloc reports no allocated bytes"; status=1; }
exit $status
