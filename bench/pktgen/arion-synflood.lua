-- pktgen-dpdk: a SYN flood at Arion's HTTP listener from a range of source
-- addresses and ports. Arion answers with SYN cookies once its SYN queue is
-- full (tcp.syn_cookies_sent in /stats); run curl or wrk through Arion at
-- the same time to see that established connections keep working.
--
--   pktgen -l 0-2 -n 4 -a 0000:81:00.0 -- -P -m "[1:2].0" -f bench/pktgen/arion-synflood.lua
package.path = package.path .. ";?.lua;test/?.lua;app/?.lua;"
require "Pktgen"

local port = "0"
local arion_mac = os.getenv("ARION_MAC") or "02:00:00:00:00:02"
local rate = tonumber(os.getenv("RATE") or "10")

pktgen.stop(port)
pktgen.range.dst_mac(port, "start", arion_mac)
pktgen.range.src_ip(port, "start", "16.0.0.1")
pktgen.range.src_ip(port, "inc", "0.0.0.1")
pktgen.range.src_ip(port, "min", "16.0.0.1")
pktgen.range.src_ip(port, "max", "16.0.255.254")
pktgen.range.dst_ip(port, "start", "198.18.0.2")
pktgen.range.dst_ip(port, "inc", "0.0.0.0")
pktgen.range.dst_ip(port, "min", "198.18.0.2")
pktgen.range.dst_ip(port, "max", "198.18.0.2")
pktgen.range.src_port(port, "start", 1024)
pktgen.range.src_port(port, "inc", 1)
pktgen.range.src_port(port, "min", 1024)
pktgen.range.src_port(port, "max", 65000)
pktgen.range.dst_port(port, "start", 80)
pktgen.range.dst_port(port, "inc", 0)
pktgen.range.dst_port(port, "min", 80)
pktgen.range.dst_port(port, "max", 80)
pktgen.range.ip_proto(port, "tcp")
pktgen.range.tcp_flags(port, "set", "syn")
pktgen.range.pkt_size(port, "start", 64)
pktgen.range.pkt_size(port, "inc", 0)
pktgen.range.pkt_size(port, "min", 64)
pktgen.range.pkt_size(port, "max", 64)
pktgen.set_range(port, "on")
pktgen.set(port, "rate", rate)
pktgen.start(port)
pktgen.delay(30000)
pktgen.stop(port)
