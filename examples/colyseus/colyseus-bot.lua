-- A player of aggro's reference Colyseus room (examples/colyseus/server.mjs), written in Lua: the
-- same player as `--mode colyseus`'s built-in reference play, for a protocol spoken by hand. A seat
-- from the matchmaker over HTTP, the room over a binary WebSocket (each frame a code byte, then
-- MessagePack), a "move" every 100 ms, the others' "moved" delivery-checked.
-- Run: aggro arena swarm --script examples/colyseus/colyseus-bot.lua --server ws://127.0.0.1:2567 --ccu 50
local JOIN_ROOM, ERROR, LEAVE_ROOM, ROOM_DATA = 10, 11, 12, 13
local pack, unpack, byte, char = msgpack.encode, msgpack.decode, string.byte, string.char

local seat, why = http.post("/matchmake/joinOrCreate/battle", {})
if not seat or seat.status ~= 200 then
  error("no seat: " .. (why or seat.body))
end
local s = seat.json
local ws = assert(websocket.connect("/" .. s.processId .. "/" .. s.roomId .. "?sessionId=" .. s.sessionId, { format = "binary" }))

local MOVE, seq = char(ROOM_DATA) .. pack("move"), 0
local function play()
  every(100, function()
    seq = seq + 1
    ws:send(MOVE .. pack({ from = bot.id, seq = seq, t = now(), x = rand(0, 1000), y = rand(0, 1000) }))
  end)
end

ws:on("message", function(frame)
  local code = byte(frame, 1) % 32
  if code == ROOM_DATA then
    local kind, at = unpack(frame, 2)
    if kind == "moved" then
      local m = unpack(frame, at)
      observe(m.from, m.seq, m.t)
    end
  elseif code == JOIN_ROOM then
    ws:send(char(JOIN_ROOM)) -- seated: ask for the state, then play
    play()
  elseif code == ERROR or code == LEAVE_ROOM then
    error("the room sent code " .. code)
  end
end)
