-- insert of one line at the top of DIR/f<n>.txt, cycling through K files per thread.
local c = dofile("bench/lua/common.lua")
local dir, k
local i = 0
function init(args) dir, k = args[1], tonumber(args[2]) end
function request()
  local f = tid * k + (i % k)
  i = i + 1
  return c.post(string.format(
    '{"command":"insert","path":"%s/f%d.txt","insert_line":0,"insert_text":"inserted line %d\\n"}', dir, f, i))
end
setup = c.setup
done = c.done
