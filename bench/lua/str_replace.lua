-- str_replace toggling a value in 1 KiB files: DIR/f<n>.txt, K files per thread (see common.lua).
local c = dofile("bench/lua/common.lua")
local next_request
function init(args) next_request = c.stateful(c.toggler(args[1], tonumber(args[2]))) end
function request() return next_request() end
setup = c.setup
done = c.done
