-- The Lua side of aggro's bot API: what yields (a bot waits for an answer or
-- a time) is written here, over the Rust functions named __*; the rest are
-- Rust functions themselves. Loaded once per Lua state, before the script.
local yield, select, unpack = coroutine.yield, select, unpack
local __http, __sleep, __connect, __call, __record, __now =
  __http, __sleep, __connect, __call, __record, now

http = {}
function http.request(r)
  __http(r.method or "GET", r.path, r.body, r.headers)
  return yield()
end
function http.get(path, opts)
  return http.request { method = "GET", path = path, headers = opts and opts.headers }
end
function http.post(path, body, opts)
  return http.request { method = "POST", path = path, body = body, headers = opts and opts.headers }
end

-- The player comes back: its script runs again from the top after a backoff (--reconnect, else 500ms..30s);
-- the coroutine that asked is never resumed.
function reconnect()
  __reconnect()
  return yield()
end

function sleep(ms)
  __sleep(ms)
  return yield()
end

socketio = {}
function socketio.connect(url, opts)
  __connect("socketio", url, opts)
  return yield()
end

websocket = {}
function websocket.connect(url, opts)
  __connect("websocket", url, opts)
  return yield()
end

local socket = {}
socket.__index = socket
function socket:on(name, fn) return __on(self, name, fn) end
-- On a closed socket, emit, send and call return nil and why (counted as failed sends).
function socket:emit(name, ...)
  local why = __emit(self, name, ...)
  if why then return nil, why end
  return true
end
function socket:send(message)
  local why = __send(self, message)
  if why then return nil, why end
  return true
end
function socket:close() return __close(self) end
function socket:call(...)
  local why = __call(self, ...)
  if why then return nil, why end
  return yield()
end
__socket_mt = socket

local function pack(...)
  return { n = select("#", ...), ... }
end

function measure(name, fn, ...)
  local t0 = __now()
  local results = pack(fn(...))
  __record(name, t0, results.n, results[1], results[2])
  return unpack(results, 1, results.n)
end
