#!/usr/bin/env bash
# Envoy's own example configurations for the L4 filters (issue 21: "loaded
# unchanged"), through the real binary's --mode validate: each file in
# tests/config/envoy-docs says where it comes from and what Arion does with
# it, "# expect: accepted" (exit 0) or "# expect: refused: TEXT" (exit 1
# and TEXT, the field and the reason, on stderr).
set -u
A=${ARION_BIN:?}
S=${ARION_SRC:?}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fails=0 n=0
for f in "$S"/tests/config/envoy-docs/*.yaml; do
	n=$((n + 1))
	exp=$(sed -n 's/^# expect: //p' "$f" | head -1)
	"$A" --mode validate -c "$f" >"$out" 2>&1
	rc=$?
	case "$exp" in
	accepted)
		if [ $rc = 0 ] && ! grep -q "warning" "$out"; then echo "ok   ${f##*/}: accepted"; else
			echo "FAIL ${f##*/}: exit $rc, wanted 0 without warnings"; sed 's/^/    /' "$out"; fails=$((fails + 1)); fi ;;
	refused:*)
		want=${exp#refused: }
		if [ $rc = 1 ] && grep -qF -- "$want" "$out"; then echo "ok   ${f##*/}: refused"; else
			echo "FAIL ${f##*/}: exit $rc, wanted 1 and: $want"; sed 's/^/    /' "$out"; fails=$((fails + 1)); fi ;;
	*)
		echo "FAIL ${f##*/}: no '# expect:' line"; fails=$((fails + 1)) ;;
	esac
done
[ $n -gt 0 ] || { echo "FAIL: no files"; exit 1; }
echo "$n files, $fails failed"
[ $fails = 0 ]
