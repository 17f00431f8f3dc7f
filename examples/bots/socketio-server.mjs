// aggro's reference Socket.IO v4 game: an HTTP login issuing a token, the game
// in the `/game` namespace (its middleware wants the token), rooms of ROOM_SIZE
// players joined in arrival order, each move broadcast to the rest of the room,
// an acknowledged `buy`, and an acknowledged `upload` of a binary attachment
// (answered with its length and the bytes back). The main namespace `/` is open and does nothing
// (clients such as Artillery's connect it first). PORT from the environment
// (default 3000). With TLS_CERT and TLS_KEY (PEM files) it serves https:// and wss:// instead.
// With MATCH_RATE (matches a second) players are matched from a queue instead: a player emits `queue`,
// and at most MATCH_RATE times a second the ROOM_SIZE longest waiting make a match — each told
// `matched` {room}, then the match's first `state` {room, players} — counted in /stats as `matches`.
import { readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { Server } from "socket.io";

const port = Number(process.env.PORT || 3000);
const roomSize = Number(process.env.ROOM_SIZE || 10);
const matchRate = Number(process.env.MATCH_RATE || 0);
const tokens = new Map();
let joined = 0;
const stats = { logins: 0, connections: 0, moves: 0, broadcasts: 0, queued: 0, matches: 0 };
// Players waiting for a match, longest first.
const queue = [];

function reply(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(text) });
  res.end(text);
}

const tls = process.env.TLS_CERT ? { cert: readFileSync(process.env.TLS_CERT), key: readFileSync(process.env.TLS_KEY) } : null;
const handle = (req, res) => {
  if (req.method === "GET" && req.url === "/stats") return reply(res, 200, { ...stats, connections: game.sockets.size, waiting: queue.length });
  if (req.method !== "POST" || req.url !== "/login") return reply(res, 404, { error: "no such page" });
  let body = "";
  req.on("data", (chunk) => (body += chunk));
  req.on("end", () => {
    let user;
    try {
      user = JSON.parse(body).user;
    } catch {
      return reply(res, 400, { error: "the body is not JSON" });
    }
    if (typeof user !== "string" || user === "") return reply(res, 400, { error: "user is missing" });
    const token = `t-${user}-${Math.random().toString(36).slice(2)}`;
    tokens.set(token, user);
    stats.logins++;
    reply(res, 200, { token });
  });
};
const http = tls ? createHttpsServer(tls, handle) : createHttpServer(handle);

const io = new Server(http, { serveClient: false, transports: ["websocket"] });
const game = io.of("/game");

game.use((socket, next) => {
  const user = tokens.get(socket.handshake.auth?.token ?? socket.handshake.query?.token);
  if (!user) return next(new Error("unauthorized: log in first"));
  socket.data.user = user;
  socket.data.gold = 100;
  next();
});

if (matchRate > 0) {
  setInterval(() => {
    // Players who left while waiting give up their place.
    while (queue.length > 0 && !queue[0].connected) queue.shift();
    if (queue.length < roomSize) return;
    const players = queue.splice(0, roomSize).filter((s) => s.connected);
    const room = `match-${stats.matches++}`;
    for (const s of players) {
      s.join(room);
      s.data.room = room;
      s.emit("matched", { room });
    }
    game.to(room).emit("state", { room, players: players.map((s) => s.data.user) });
  }, 1000 / matchRate);
}

game.on("connection", (socket) => {
  if (matchRate > 0) {
    socket.on("queue", () => {
      if (socket.data.queued) return;
      socket.data.queued = true;
      stats.queued++;
      queue.push(socket);
    });
  } else {
    const room = `room-${Math.floor(joined++ / roomSize)}`;
    socket.join(room);
    socket.data.room = room;
    socket.emit("joined", { room, user: socket.data.user });
  }
  socket.on("move", (move) => {
    const room = socket.data.room;
    if (!room) return;
    stats.moves++;
    stats.broadcasts += (game.adapter.rooms.get(room)?.size ?? 1) - 1;
    socket.to(room).emit("moved", move);
  });
  socket.on("buy", (item, ack) => {
    if (typeof ack !== "function") return;
    const price = item?.price ?? 1;
    if (socket.data.gold < price) return ack({ ok: false, gold: socket.data.gold });
    socket.data.gold -= price;
    ack({ ok: true, gold: socket.data.gold });
  });
  socket.on("upload", (file, ack) => {
    if (typeof ack !== "function") return;
    if (!Buffer.isBuffer(file?.data)) return ack({ error: "data is not binary" });
    ack({ name: file.name, bytes: file.data.length, echo: file.data });
  });
});

http.listen(port, "127.0.0.1", () => console.log(`socket.io game on ${tls ? "https" : "http"}://127.0.0.1:${port}`));
