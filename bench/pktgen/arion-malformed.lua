-- pktgen-dpdk 24.03.1: a mix of malformed and unwanted frames at Arion
-- (bench/pktgen/frames.py malformed: 77 kinds, each of which must
-- land in the lib/net counter docs/dataplane.md names), replayed from a
-- pcap at rising rates. Arion must count every frame and keep serving.
--
--   bench/pktgen/frames.py malformed mix.pcap ARION_MAC PKTGEN_MAC 198.18.0.1 198.18.0.2
--   ARN_PG_RATES="0.5 1" pktgen -l 0-2 -n 4 -a 0000:81:00.0 -- -m "[1:2].0" \
--     -s 0:mix.pcap -f bench/pktgen/arion-malformed.lua
--
-- Some kinds make Arion answer (RSTs to 198.18.0.1): pktgen answers its
-- ARP (process mode, on after ARN_PG_GO: see arion-synflood.lua).
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local C = dofile(here .. "arion-common.lua")

pktgen.stop(C.port)
pktgen.set_ipaddr(C.port, "src", C.env("PG_IP", "198.18.0.1/24"))
pktgen.pcap(C.port, "on")
C.wait_go()
pktgen.process(C.port, "on")
for i, pct in ipairs(C.rates()) do
	C.step("mix-" .. i, pct)
end
C.finish()
