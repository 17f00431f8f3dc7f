// aggro's reference plain-WebSocket game with its own JSON protocol:
//   {type: "hello", name, id}        -> {type: "welcome", id, room}   (id echoed: a reply)
//   {type: "move", from, seq, t, …}  -> {type: "moved", …} to the rest of the room
//   {type: "ping", id}               -> {type: "pong", id}
// Rooms of ROOM_SIZE in arrival order. PORT from the environment (default 3001).
// /game?format=msgpack speaks the same protocol in MessagePack, in binary frames;
// its welcome also carries `token`, three raw bytes (MessagePack bin).
import { WebSocketServer } from "ws";
import { encode, decode } from "@msgpack/msgpack";

const port = Number(process.env.PORT || 3001);
const roomSize = Number(process.env.ROOM_SIZE || 10);
const rooms = new Map();
let joined = 0;

const wss = new WebSocketServer({ host: "127.0.0.1", port, path: "/game" });
wss.on("connection", (ws, req) => {
  const pack = new URL(req.url, "http://localhost").searchParams.get("format") === "msgpack";
  const write = pack ? encode : JSON.stringify;
  const read = pack ? decode : JSON.parse;
  const name = `room-${Math.floor(joined++ / roomSize)}`;
  if (!rooms.has(name)) rooms.set(name, new Set());
  const room = rooms.get(name);
  room.add(ws);
  ws.on("close", () => room.delete(ws));
  ws.on("message", (data) => {
    let msg;
    try {
      msg = read(data);
    } catch {
      return ws.send(write({ type: "error", error: pack ? "not MessagePack" : "not JSON" }));
    }
    if (msg.type === "hello") {
      const welcome = { type: "welcome", id: msg.id, room: name };
      ws.send(write(pack ? { ...welcome, token: new Uint8Array([0, 159, 146]) } : welcome));
    } else if (msg.type === "ping") ws.send(write({ type: "pong", id: msg.id }));
    else if (msg.type === "move") {
      const moved = write({ ...msg, type: "moved" });
      for (const other of room) if (other !== ws) other.send(moved);
    } else ws.send(write({ type: "error", error: `unknown type ${msg.type}` }));
  });
});
wss.on("listening", () => console.log(`websocket game on ws://127.0.0.1:${port}/game`));
