#!/usr/bin/env bash
# Response compression end to end: curl --compressed through Arion's
# envoy.filters.http.compressor (gzip, brotli, zstd) against nginx serving
# a text file; the decoded body's SHA-256 equals the file's, and the
# headers and stats say what happened.
set -u
. "${ARION_SRC:?}/tests/topo/topo.sh"
topo_require ip ethtool nginx curl || exit 77
. "$ARION_SRC/tests/http/e2e_lib.sh"
topo_init arn-cz
http_e2e_topo || exit 1
http_e2e_nginx || exit 1
grep -v '^#' "$ARION_SRC/tests/http/e2e_compress.yaml" >"$TOPO_DIR/body.yaml"
http_e2e_arion "$TOPO_DIR/body.yaml" || exit 1
expect() { if [[ "$2" =~ $3 ]]; then ok "$1"; else bad "$1: got '$2', wanted /$3/"; fi; }

for i in $(seq 1 20000); do echo "line $i of a text that compresses well"; done >"$TOPO_DIR/www/t.txt"
chmod 644 "$TOPO_DIR/www/t.txt"
want=$(sha256sum <"$TOPO_DIR/www/t.txt" | cut -d' ' -f1)
size=$(wc -c <"$TOPO_DIR/www/t.txt")

for enc in gzip br zstd; do
	hdr="$TOPO_DIR/h-$enc"
	got=$(cc --compressed -H "Accept-Encoding: $enc" -D "$hdr" http://$us/www/t.txt | sha256sum | cut -d' ' -f1)
	expect "$enc: decoded body equals the file" "$got" "^$want$"
	expect "$enc: content-encoding" "$(tr -d '\r' <"$hdr" | grep -i '^content-encoding:' | tr A-Z a-z)" "^content-encoding: $enc$"
	expect "$enc: vary" "$(tr -d '\r' <"$hdr" | grep -i '^vary:')" "accept-encoding"
	wire=$(cc -H "Accept-Encoding: $enc" http://$us/www/t.txt | wc -c)
	[ "$wire" -lt $((size / 4)) ] && ok "$enc: $wire bytes on the wire for $size" || bad "$enc: $wire bytes for $size"
done
got=$(cc -H "Accept-Encoding: identity" -D "$TOPO_DIR/h-id" http://$us/www/t.txt | sha256sum | cut -d' ' -f1)
expect "identity: the file as it is" "$got" "^$want$"
expect "identity: content-length kept" "$(tr -d '\r' <"$TOPO_DIR/h-id" | grep -i '^content-length:' | tr A-Z a-z)" "^content-length: $size$"
expect "gzip compressed counted" "$(stat http.cmp.compressor.text.gzip.response.compressed)" "^2$"
expect "brotli compressed counted" "$(stat http.cmp.compressor.text.brotli.compressed)" "^2$"
expect "zstd compressed counted" "$(stat http.cmp.compressor.text.zstd.compressed)" "^2$"
expect "identity counted" "$(stat http.cmp.compressor.text.gzip.header_identity)" "^1$"
topo_arion_stop || bad "arion exit code $?"
http_e2e_finish
