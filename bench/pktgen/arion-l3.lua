-- pktgen-dpdk: Arion's L3 path at line rate (ICMP echo and ARP are answered
-- by the worker lcores without the TCP stack).
--
--   pktgen -l 0-2 -n 4 -a 0000:81:00.0 -- -P -m "[1:2].0" -f bench/pktgen/arion-l3.lua
--
-- Port 0 of pktgen is cabled to Arion's "client" port (198.18.0.2, see
-- bench/trex/arion-trex.yaml); set ARION_MAC to that port's MAC (Arion logs
-- it at start). Compare pktgen's RX rate with its TX rate: the difference is
-- what Arion dropped; Arion's own drop counters are in /stats (dpdk.*).
package.path = package.path .. ";?.lua;test/?.lua;app/?.lua;"
require "Pktgen"

local port = "0"
local arion_ip = "198.18.0.2"
local arion_mac = os.getenv("ARION_MAC") or "02:00:00:00:00:02"
local size = tonumber(os.getenv("PKT_SIZE") or "64")
local rate = tonumber(os.getenv("RATE") or "100") -- percent of line rate

pktgen.stop(port)
pktgen.set_mac(port, "dst", arion_mac)
pktgen.set_ipaddr(port, "src", "198.18.0.1/24")
pktgen.set_ipaddr(port, "dst", arion_ip)
pktgen.set_proto(port, "icmp")
pktgen.set_type(port, "ipv4")
pktgen.set(port, "size", size)
pktgen.set(port, "rate", rate)
pktgen.set(port, "count", 0)
pktgen.start(port)
pktgen.delay(30000)
pktgen.stop(port)
printf("ICMP echo to %s: see the port statistics page for TX vs RX\n", arion_ip)
