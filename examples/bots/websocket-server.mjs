// aggro's reference plain-WebSocket game with its own JSON protocol:
//   {type: "hello", name, id}        -> {type: "welcome", id, room}   (id echoed: a reply)
//   {type: "move", from, seq, t, …}  -> {type: "moved", …} to the rest of the room
//   {type: "ping", id}               -> {type: "pong", id}
// Rooms of ROOM_SIZE in arrival order. PORT from the environment (default 3001).
import { WebSocketServer } from "ws";

const port = Number(process.env.PORT || 3001);
const roomSize = Number(process.env.ROOM_SIZE || 10);
const rooms = new Map();
let joined = 0;

const wss = new WebSocketServer({ host: "127.0.0.1", port, path: "/game" });
wss.on("connection", (ws) => {
  const name = `room-${Math.floor(joined++ / roomSize)}`;
  if (!rooms.has(name)) rooms.set(name, new Set());
  const room = rooms.get(name);
  room.add(ws);
  ws.on("close", () => room.delete(ws));
  ws.on("message", (data) => {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return ws.send(JSON.stringify({ type: "error", error: "not JSON" }));
    }
    if (msg.type === "hello") ws.send(JSON.stringify({ type: "welcome", id: msg.id, room: name }));
    else if (msg.type === "ping") ws.send(JSON.stringify({ type: "pong", id: msg.id }));
    else if (msg.type === "move") {
      const text = JSON.stringify({ ...msg, type: "moved" });
      for (const other of room) if (other !== ws) other.send(text);
    } else ws.send(JSON.stringify({ type: "error", error: `unknown type ${msg.type}` }));
  });
});
wss.on("listening", () => console.log(`websocket game on ws://127.0.0.1:${port}/game`));
