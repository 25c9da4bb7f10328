-- view PATH (a file or a directory), the same request every time.
--   wrk ... -s bench/lua/view.lua URL -- /memories/bench/file-1k.txt
local c = dofile("bench/lua/common.lua")
local req
function init(args)
  req = c.post(string.format('{"command":"view","path":"%s"}', args[1]))
end
function request() return req end
setup = c.setup
done = c.done
