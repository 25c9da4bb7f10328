-- rename of a file back and forth inside DIR: each thread owns K of the files DIR/f<nnn>.txt
-- (thread t: f[t*K] .. f[t*K+K-1]) and cycles through them, moving f<nnn>.txt to g<nnn>.txt and
-- back. Run it with one connection per thread (wrk -tN -cN): then every request succeeds; with
-- several connections to a thread, a slow request may be overtaken by the next one on its file.
local c = dofile("bench/lua/common.lua")
local dir, k
local moved = {}
local i = 0
function init(args) dir, k = args[1], tonumber(args[2]) end
request = c.stateful(function()
  local f = tid * k + (i % k)
  i = i + 1
  local from = string.format("%s/f%03d.txt", dir, f)
  local to = string.format("%s/g%03d.txt", dir, f)
  if moved[f] then from, to = to, from end
  moved[f] = not moved[f]
  return c.post(string.format('{"command":"rename","old_path":"%s","new_path":"%s"}', from, to))
end)
setup = c.setup
done = c.done
