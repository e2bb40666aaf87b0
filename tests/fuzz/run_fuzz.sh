#!/usr/bin/env bash
# Run one libFuzzer target for a bounded time on its seed corpus.
#   run_fuzz.sh BINARY SEED_DIR SECONDS
# New inputs go to a scratch directory, so the committed seeds stay as they
# are; a crash leaves its reproducer in tests/fuzz/fuzz-artifacts/.
set -eu
bin=$1 seeds=$2 secs=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
art=${ARION_SRC:-.}/tests/fuzz/fuzz-artifacts/
mkdir -p "$art"
# libFuzzer exits 77 on a finding by default, which meson reads as "skipped":
# make every finding (crash, leak, timeout, OOM) a failure.
# a dictionary beside the seeds (SEED_DIR.dict), when there is one
dict=()
[ -f "${seeds%/}.dict" ] && dict=(-dict="${seeds%/}.dict")
exec "$bin" "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-error_exitcode=1 -timeout_exitcode=1 \
	-artifact_prefix="$art" "$work" "$seeds"
