-- GET /v1/search?q=WORD of tenant TENANT, the same request every time.
--   wrk ... -s bench/lua/search.lua URL -- WORD TENANT
local c = dofile("bench/lua/common.lua")
local req
function init(args)
  req = wrk.format("GET", "/v1/search?q=" .. args[1], { ["X-Tenant-ID"] = args[2] })
end
function request() return req end
setup = c.setup
done = c.done
