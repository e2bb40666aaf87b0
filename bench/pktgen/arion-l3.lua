-- pktgen-dpdk 24.03.1: Arion's L3 path at rising rates. ICMP echo requests
-- replayed from a pcap (pktgen's own ICMP mode sends a malformed Timestamp
-- message instead): every request Arion's worker receives gets a reply.
--
--   bench/pktgen/frames.py echo echo.pcap ARION_MAC PKTGEN_MAC 198.18.0.1 198.18.0.2
--   ARN_PG_RATES="0.5 1 2" ARN_PG_SECONDS=10 \
--     pktgen -l 0-2 -n 4 -a 0000:81:00.0 -- -m "[1:2].0" -s 0:echo.pcap -f bench/pktgen/arion-l3.lua
--
-- For each rate (percent of the link) it prints pktgen's TX and RX: RX
-- below TX is what was not answered. Arion's counters (/stats:
-- dpdk.port.<port>.icmp_rx_echo, icmp_tx_echo_reply, nic_rx_missed) say
-- where the difference went. bench/pktgen/run does all of it on a veth.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local C = dofile(here .. "arion-common.lua")

pktgen.stop(C.port)
pktgen.pcap(C.port, "on")
C.wait_go()
for i, pct in ipairs(C.rates()) do
	C.step("l3-" .. i, pct)
end
C.finish()
