-- delete+create: each thread cycles through K slots DIR/t<thread>-s<n>.txt, creating a 1 KiB file
-- where there is none and deleting it where there is one; every request succeeds.
local c = dofile("bench/lua/common.lua")
local dir, k
local text = c.kib_text()
local exists = {}
local i = 0
function init(args) dir, k = args[1], tonumber(args[2]) end
request = c.stateful(function()
  local s = i % k
  i = i + 1
  local path = string.format("%s/t%d-s%d.txt", dir, tid, s)
  exists[s] = not exists[s]
  if exists[s] then
    return c.post(string.format('{"command":"create","path":"%s","file_text":"%s"}', path, text))
  end
  return c.post(string.format('{"command":"delete","path":"%s"}', path))
end)
setup = c.setup
done = c.done
