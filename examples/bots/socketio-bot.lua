-- A player of examples/bots/socketio-server.mjs: logs in over HTTP, joins a
-- room over Socket.IO, moves every 100 ms and buys now and then (an acked
-- round trip). Run: aggro arena swarm --script examples/bots/socketio-bot.lua --server ws://127.0.0.1:3000 --ccu 50
local login, why = measure("login", http.post, "/login", { user = bot.name })
if not login or login.status ~= 200 then
  error("login failed: " .. (why or login.body))
end
stage("logged_in") -- the funnel: logged_in, connected (aggro's own), joined


local ws = assert(socketio.connect("/socket.io/", { namespace = "/game", auth = { token = login.json.token } }))
local seq = 0
ws:on("joined", function(info)
  count("joined")
  stage("joined")
end)
ws:on("moved", function(move) end) -- delay and delivery are checked from its from/seq/t

every(100, function()
  seq = seq + 1
  ws:emit("move", { from = bot.id, seq = seq, t = now(), x = rand(0, 1000), y = rand(0, 1000) })
end)

every(1000, function()
  local receipt = ws:call("buy", { price = 1 })
  if receipt and receipt.ok then count("bought") end
end)
