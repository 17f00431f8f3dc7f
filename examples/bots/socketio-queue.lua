-- A player of examples/bots/socketio-server.mjs run with MATCH_RATE (a matchmaking queue): logs in over
-- HTTP, connects over Socket.IO, queues, and once matched moves every 100 ms — its way in timed stage by
-- stage from its intended start (the funnel): logged_in, connected (aggro's own), queued, matched,
-- first_state (the match's first state).
-- Run: MATCH_RATE=30 ROOM_SIZE=10 node examples/bots/socketio-server.mjs, then
--      aggro arena swarm --script examples/bots/socketio-queue.lua --server ws://127.0.0.1:3000 --ccu 2000
local login, why = measure("login", http.post, "/login", { user = bot.name })
if not login or login.status ~= 200 then
  error("login failed: " .. (why or login.body))
end
stage("logged_in")

local ws = assert(socketio.connect("/socket.io/", { namespace = "/game", auth = { token = login.json.token } }))
ws:emit("queue", {})
stage("queued")

local seq = 0
ws:on("matched", function(info)
  count("matched")
  stage("matched")
  every(100, function()
    seq = seq + 1
    ws:emit("move", { from = bot.id, seq = seq, t = now(), x = rand(0, 1000), y = rand(0, 1000) })
  end)
end)
ws:on("state", function(state)
  stage("first_state")
end)
ws:on("moved", function(move) end) -- delay and delivery are checked from its from/seq/t
