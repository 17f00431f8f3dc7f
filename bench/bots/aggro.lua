-- The benchmark's player, as aggro runs it: logs in over HTTP, joins a room over
-- Socket.IO, moves every 100 ms and receives the room's broadcasts (delay and
-- delivery checked from their from/seq/t). bench/bots/bots-vs-peers.sh.
local login = http.post("/login", { user = bot.name })
local ws = assert(socketio.connect("/socket.io/", { namespace = "/game", auth = { token = login.json.token } }))
local seq = 0
every(100, function()
  seq = seq + 1
  ws:emit("move", { from = bot.id, seq = seq, t = now(), x = rand(0, 1000), y = rand(0, 1000) })
end)
