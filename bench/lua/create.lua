-- create of a new 1 KiB file at a unique path: DIR/t<thread>-<n>.txt (DIR unique per run).
local c = dofile("bench/lua/common.lua")
local dir
local text = c.kib_text()
local n = 0
function init(args) dir = args[1] end
function request()
  n = n + 1
  return c.post(string.format('{"command":"create","path":"%s/t%d-%d.txt","file_text":"%s"}', dir, tid, n, text))
end
setup = c.setup
done = c.done
