#!/usr/bin/env bash
# Build (optimized) and run the configuration benchmark; prints a report.
#   bench/config/run.sh [BUILD_DIR] [N_CLUSTERS] [N_ROUTES]
# Time and memory to apply one changed cluster among N_CLUSTERS (default
# 10000) against rebuilding all of them, and route matching against a
# N_ROUTES-route table (default 1000). Nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build-bench}
if [ ! -f "$dir/build.ninja" ]; then
	scripts/build "$dir" -Dbuildtype=release >/dev/null
fi
ninja -C "$dir" bench/config/bench_config >/dev/null
echo "# arion config benchmark, $(date -u +%F) on $(nproc) CPU(s): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
"$dir/bench/config/bench_config" "${2:-10000}" "${3:-1000}"
