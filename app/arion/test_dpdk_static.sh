#!/bin/sh
# The arion binary carries DPDK statically (-Ddpdk_static=true; meson.build
# says why): no shared DPDK library is loaded at run time (one would bring
# EAL's plugin directory, and a second EAL, back), the PMDs the tests, the
# benchmarks and the docs use are in it, and nothing reaches a __thread
# through __tls_get_addr (the 44 instructions a request the shared
# af_packet PMD spent on rte_lcore_id). And an EAL -d (a shared driver to
# load, which would bring that second EAL) is refused at start-up with a
# message that says so, before DPDK starts.
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
cfg=$(mktemp)
trap 'rm -f "$cfg"' EXIT
cat >"$cfg" <<EOF
envoy_bootstrap:
  node: {id: t, cluster: t}
dataplane:
  eal_args: ["--no-huge", "--no-pci", "--in-memory", "-m", "64", "-d", "/nonexistent/librte_net_x.so"]
  worker_lcores: [1]
  ports:
    - {device: net_null0, ipv4: 198.18.0.2/24}
EOF
out=$(timeout 60 "$bin" -c "$cfg" 2>&1)
rc=$?
if [ $rc != 0 ] && [ $rc != 124 ] && echo "$out" | grep -q 'EAL argument -d (load a shared DPDK driver)'; then
	echo "ok: -d refused (exit $rc)"
else
	echo "FAIL: -d not refused (exit $rc):"; echo "$out" | tail -5; fail=1
fi
exit $fail
