#!/bin/sh
# The arion binary carries DPDK statically (-Ddpdk_static=true; meson.build
# says why): no shared DPDK library is loaded at run time (one would bring
# EAL's plugin directory, and a second EAL, back), the PMDs the tests, the
# benchmarks and the docs use are in it, and nothing reaches a __thread
# through __tls_get_addr (the 44 instructions a request the shared
# af_packet PMD spent on rte_lcore_id).
#   test_dpdk_static.sh ARION_BINARY
set -u
bin=$1
fail=0
needed=$(readelf -d "$bin" | grep 'NEEDED.*librte_')
if [ -n "$needed" ]; then
	echo "FAIL: $bin loads shared DPDK libraries:"; echo "$needed"; fail=1
else
	echo "ok: no shared DPDK library needed"
fi
syms=$(nm "$bin")
for d in af_packet af_xdp tap ring null; do
	if echo "$syms" | grep -q "vdrvinitfn_pmd_${d}_drv\$"; then
		echo "ok: net_$d is linked in"
	else
		echo "FAIL: net_$d's registration is missing (not linked whole?)"; fail=1
	fi
done
calls=$(objdump -d --no-show-raw-insn "$bin" | grep -c 'call.*<__tls_get_addr')
if [ "$calls" != 0 ]; then
	echo "FAIL: $calls calls of __tls_get_addr"; fail=1
else
	echo "ok: no call of __tls_get_addr"
fi
exit $fail
