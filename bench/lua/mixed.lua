-- 80% reads / 20% writes: views of the 1 KiB files DIR/f<n>.txt and str_replace toggles of
-- them (K files per thread; see common.lua).
local c = dofile("bench/lua/common.lua")
local dir, k, toggle
local i = 0
function init(args)
  dir, k = args[1], tonumber(args[2])
  toggle = c.toggler(dir, k)
end
request = c.stateful(function()
  i = i + 1
  if i % 5 == 0 then return toggle() end
  return c.post(string.format('{"command":"view","path":"%s/f%d.txt"}', dir, tid * k + (i * 7) % k))
end)
setup = c.setup
done = c.done
