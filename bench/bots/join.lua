-- Joins only: logs in over HTTP and joins the game namespace, then stays (bench/bots/bots-vs-peers.sh's joins per second).
local login = http.post("/login", { user = bot.name })
local ws = assert(socketio.connect("/socket.io/", { namespace = "/game", auth = { token = login.json.token } }))
ws:on("disconnect", function() end)
