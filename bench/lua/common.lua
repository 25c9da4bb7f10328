-- Shared by the wrk scripts of bench/run.sh. Each script does
--   local c = dofile("bench/lua/common.lua")
-- and wrk is run from the repository root. Threads get an id (`tid`, 0-based) in setup().
local M = {}

-- The tenant is "bench", or $BENCH_TENANT.
M.headers = { ["Content-Type"] = "application/json", ["X-Tenant-ID"] = os.getenv("BENCH_TENANT") or "bench" }

function M.post(body)
  return wrk.format("POST", "/memory", M.headers, body)
end

-- 1 KiB of text as a JSON string body: 16 lines of 63 letters and a newline.
function M.kib_text()
  local line = string.rep("abcdefghi", 7)
  return string.rep(line .. "\\n", 16)
end

-- Thread ids, set from the main Lua state.
local nthreads = 0
function M.setup(thread)
  thread:set("tid", nthreads)
  nthreads = nthreads + 1
end

-- One line the runner parses: throughput, latency percentiles (microseconds), failures.
function M.done(summary, latency, requests)
  local e = summary.errors
  local secs = summary.duration / 1e6
  io.write(string.format(
    'BENCH {"requests":%d,"seconds":%.3f,"rps":%.1f,"p50_us":%d,"p99_us":%d,"non2xx":%d,"socket_errors":%d}\n',
    summary.requests, secs, summary.requests / secs, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout))
end

-- wrk (4.1) asks each thread for one request that it never sends; a stateful script must not
-- advance its state for it. stateful(fn) returns a request function whose first call gives a
-- harmless view of /memories (so nothing breaks if it is sent after all) and every later call
-- fn().
function M.stateful(fn)
  local first = true
  return function()
    if first then
      first = false
      return M.post('{"command":"view","path":"/memories"}')
    end
    return fn()
  end
end

-- A str_replace that flips "state=on" <-> "state=off" in the files DIR/f<n>.txt; each thread
-- owns K files and cycles through them, so no two requests in flight touch the same file (K is
-- far above the connections per thread) and every request finds exactly one match.
function M.toggler(dir, k)
  local off = {}
  local i = 0
  return function()
    local f = tid * k + (i % k)
    i = i + 1
    local old, new = "state=on", "state=off"
    if off[f] then old, new = new, old end
    off[f] = not off[f]
    return M.post(string.format(
      '{"command":"str_replace","path":"%s/f%d.txt","old_str":"%s","new_str":"%s"}', dir, f, old, new))
  end
end

return M
