-- Shared by bench/pktgen's profiles (pktgen-dpdk 24.03.1 Lua scripts).
-- Loaded with dofile from the profile's own directory, so pktgen's source
-- tree need not be the working directory (no `require "Pktgen"`: the
-- `pktgen` table is pktgen's built-in library).
--
-- Environment (all optional; bench/pktgen/run sets them):
--   PG_PORT          pktgen port number (0)
--   ARN_PG_RATES     transmit rates to step through, in percent of the
--                    port's link speed, pktgen's unit ("1")
--   ARN_PG_SECONDS   seconds of traffic per rate (10)
--   ARN_PG_OUT       where the results go, one line per step (stdout only)
--   ARN_PG_HOOK      a command run with a label before and after each step
--                    (bench/pktgen/run snapshots Arion's and the kernel's
--                    counters there)
--   ARN_PG_GO        a file to wait for before sending (run renices
--                    pktgen's threads meanwhile)
--   ARN_PG_EXIT      "1": end pktgen when done (pktgen.quit() does not)
local C = {}

function C.env(name, dflt)
	local v = os.getenv(name)
	if v == nil or v == "" then
		return dflt
	end
	return v
end

C.port = C.env("PG_PORT", "0")
C.seconds = tonumber(C.env("ARN_PG_SECONDS", "10"))

function C.rates()
	local t = {}
	for w in C.env("ARN_PG_RATES", "1"):gmatch("%S+") do
		t[#t + 1] = tonumber(w)
	end
	return t
end

local outpath = C.env("ARN_PG_OUT", nil)
local out = outpath and io.open(outpath, "w")

function C.say(fmt, ...)
	local line = string.format(fmt, ...)
	if out then
		out:write(line, "\n")
		out:flush()
	end
	print(line)
end

function C.hook(label)
	local h = C.env("ARN_PG_HOOK", nil)
	if h then
		os.execute(h .. " " .. label)
	end
end

-- pktgen's port counters (rte_eth_stats), as its timer thread last read
-- them: it refreshes them once a second.
function C.stats()
	return pktgen.portStats(C.port, "port")[tonumber(C.port)]
end

-- Wall-clock seconds (pktgen.delay sleeps at least as long as asked, and
-- may oversleep on a busy machine: rates are measured, not assumed).
function C.now()
	local p = io.popen("date +%s.%N")
	local t = tonumber(p:read("*l"))
	p:close()
	return t
end

-- Long enough for one refresh of those counters.
function C.settle()
	pktgen.delay(1300)
end

-- pktgen's CLI has commands its Lua library lacks (TCP flags of the range
-- packet): run them from a command file. pktgen.run wants three arguments.
function C.cli(lines)
	local path = os.tmpname()
	local f = io.open(path, "w")
	for _, l in ipairs(lines) do
		f:write(l, "\n")
	end
	f:close()
	pktgen.run("cmd", path, "")
	os.remove(path)
end

function C.wait_go()
	local go = C.env("ARN_PG_GO", nil)
	local f = io.open("/proc/self/stat")
	C.say("pid %d", f:read("*n"))
	f:close()
	if not go then
		return
	end
	for _ = 1, 600 do
		local g = io.open(go)
		if g then
			g:close()
			return
		end
		pktgen.delay(100)
	end
	C.say("error: %s did not appear", go)
end

-- One measured step: @pct percent of the link for C.seconds, with the
-- hook before and after, and pktgen's TX and RX during it (replies that
-- arrive within 300 ms of the stop included). @pct nil: no traffic (a
-- baseline of the same length).
function C.step(label, pct)
	if pct then
		pktgen.set(C.port, "rate", pct)
	end
	C.settle()
	local a = C.stats()
	C.hook(label .. ".pre")
	local t0 = C.now()
	if pct then
		pktgen.start(C.port)
	end
	pktgen.delay(math.floor(C.seconds * 1000))
	if pct then
		pktgen.stop(C.port)
	end
	local took = C.now() - t0
	pktgen.delay(300)
	C.settle()
	local b = C.stats()
	C.hook(label .. ".post")
	C.say("step %s rate_pct=%s seconds=%.3f pktgen_tx=%d pktgen_rx=%d", label, tostring(pct or 0),
		took, b.opackets - a.opackets, b.ipackets - a.ipackets)
end

function C.finish()
	C.say("done")
	if out then
		out:close()
	end
	if C.env("ARN_PG_EXIT", "0") == "1" then
		local f = io.open("/proc/self/stat")
		local pid = f:read("*n")
		f:close()
		os.execute("kill -TERM " .. pid)
	end
end

return C
