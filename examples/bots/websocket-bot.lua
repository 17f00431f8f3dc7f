-- A player of examples/bots/websocket-server.mjs (its own JSON protocol):
-- says hello (a request answered by the message with the same id), moves
-- every 100 ms, pings every second. Run: aggro arena swarm --script
-- examples/bots/websocket-bot.lua --server ws://127.0.0.1:3001 --ccu 50
local ws = assert(websocket.connect("/game", { format = "json", type = "type", reply = "id" }))
local welcome = ws:call({ type = "hello", name = bot.name })
count(welcome.type)

local seq = 0
ws:on("moved", function(move) end) -- delay and delivery are checked from its from/seq/t
every(100, function()
  seq = seq + 1
  ws:send({ type = "move", from = bot.id, seq = seq, t = now(), x = rand(0, 1000) })
end)
every(1000, function()
  measure("ping", ws.call, ws, { type = "ping" })
end)
