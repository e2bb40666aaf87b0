-- pktgen-dpdk 24.03.1: a SYN flood at Arion's HTTP listener from 65,534
-- source addresses (16.0.0.0/16) and changing source ports. Arion answers
-- with SYN cookies once its SYN queue is full (tcp.*.syn_cookies_sent);
-- run clients through Arion meanwhile to see what a normal client gets
-- (bench/pktgen/run does, and measures a baseline without the flood).
--
--   ARION_MAC=.. ARN_PG_RATES="1" pktgen -l 0-2 -n 4 -a 0000:81:00.0 -- -m "[1:2].0" \
--     -f bench/pktgen/arion-synflood.lua
--
-- Arion routes 16.0.0.0/16 through its gateway (PG_IP, 198.18.0.1): pktgen
-- answers Arion's ARP for it (process mode), or every SYN-ACK waits for
-- ARP and is dropped (arp_drop_queue_full). pktgen 24.03.1 crashes when a
-- gratuitous ARP from an address it sends to arrives with process mode on
-- (pktgen_process_arp writes through a NULL pointer): it is turned on after
-- ARN_PG_GO, which bench/pktgen/run creates once Arion has announced
-- itself (three times, a second apart, from its start).
-- Source addresses step through the range (pktgen's random bits would
-- leave the IP and TCP checksums wrong).
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local C = dofile(here .. "arion-common.lua")
local p = C.port
local arion_mac = C.env("ARION_MAC", "02:00:00:00:00:02")
local arion_ip = C.env("ARION_IP", "198.18.0.2")
local port = tonumber(C.env("ARION_HTTP_PORT", "80"))

pktgen.stop(p)
pktgen.set_ipaddr(p, "src", C.env("PG_IP", "198.18.0.1/24"))
pktgen.range.dst_mac(p, "start", arion_mac)
pktgen.range.src_ip(p, "start", "16.0.0.1")
pktgen.range.src_ip(p, "inc", "0.0.0.1")
pktgen.range.src_ip(p, "min", "16.0.0.1")
pktgen.range.src_ip(p, "max", "16.0.255.254")
pktgen.range.dst_ip(p, "start", arion_ip)
pktgen.range.dst_ip(p, "inc", "0.0.0.0")
pktgen.range.dst_ip(p, "min", arion_ip)
pktgen.range.dst_ip(p, "max", arion_ip)
pktgen.range.src_port(p, "start", 1024)
pktgen.range.src_port(p, "inc", 1)
pktgen.range.src_port(p, "min", 1024)
pktgen.range.src_port(p, "max", 65000)
pktgen.range.dst_port(p, "start", port)
pktgen.range.dst_port(p, "inc", 0)
pktgen.range.dst_port(p, "min", port)
pktgen.range.dst_port(p, "max", port)
pktgen.range.ip_proto(p, "tcp")
pktgen.range.pkt_size(p, "start", 64)
pktgen.range.pkt_size(p, "inc", 0)
pktgen.range.pkt_size(p, "min", 64)
pktgen.range.pkt_size(p, "max", 64)
-- No Lua call sets TCP flags (pktgen.range.tcp_flags does not exist):
-- pktgen's CLI does.
C.cli({"range " .. p .. " tcp flag clr all", "range " .. p .. " tcp flag set syn"})
pktgen.set_range(p, "on")
C.wait_go()
pktgen.process(p, "on")
-- Arion resolves its gateway when the first SYN-ACK needs it; what waits
-- meanwhile beyond its ARP queue is dropped (arp_drop_queue_full). So
-- pktgen asks for Arion's address first (Arion learns who asks).
pktgen.set_ipaddr(p, "dst", arion_ip)
pktgen.send_arp(p, "request")
C.step("base", nil)
-- pktgen builds its range packets on the first start, which takes a while:
-- a slow burst first, not measured.
pktgen.set(p, "rate", 0.01)
pktgen.start(p)
pktgen.delay(1000)
pktgen.stop(p)
for i, pct in ipairs(C.rates()) do
	C.step("flood-" .. i, pct)
end
C.finish()
