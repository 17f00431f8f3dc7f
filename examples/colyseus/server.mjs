// aggro's reference Colyseus room (issue 19): up to MAX_CLIENTS players in a
// MapSchema with x/y, state patches every PATCH_MS, and every "move" a player
// sends broadcast to the others as "moved" {from, seq, t} — t is the sender's
// timestamp, echoed untouched, so a receiver on the same machine measures the
// action-to-observer delay on the shared clock.
//
//   PORT=2567 MAX_CLIENTS=50 PATCH_MS=50 BACKLOG=4096 [BROADCAST=0] [STATS=1] node server.mjs
//
// Rooms: "battle" (joinOrCreate makes a new one when every room is full) and
// "lobby" (one room made at start; `join` is refused once it is full).
import { Server, Room, matchMaker } from "@colyseus/core";
import { WebSocketTransport } from "@colyseus/ws-transport";
import { schema, t } from "@colyseus/schema";

const Player = schema({ x: t.number(), y: t.number() }, "Player");
const BattleState = schema({ players: t.map(Player) }, "BattleState");

const env = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined || v === "") return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) {
    console.error(`server.mjs: ${name}=${v} is not a positive integer`);
    process.exit(2);
  }
  return n;
};
const PORT = env("PORT", 2567);
const MAX_CLIENTS = env("MAX_CLIENTS", 50);
const PATCH_MS = env("PATCH_MS", 50);
// The listen queue (the kernel caps it at net.core.somaxconn). Node's default of 511 overflowed at 1,000
// joins a second: the kernel dropped SYNs, and each such join waited a second for its retry.
const BACKLOG = env("BACKLOG", 4096);
// BROADCAST=0: moves change the state (and so the patches) but are not broadcast.
const BROADCAST = process.env.BROADCAST !== "0";

let moves = 0; // moves received, all rooms (STATS)

class Battle extends Room {
  onCreate() {
    this.maxClients = MAX_CLIENTS;
    this.patchRate = PATCH_MS;
    this.state = new BattleState();
    this.onMessage("move", (client, m) => {
      const p = this.state.players.get(client.sessionId);
      if (p === undefined || m === null || typeof m !== "object") return;
      p.x = m.x; p.y = m.y;
      moves += 1;
      if (BROADCAST) this.broadcast("moved", { from: m.from, seq: m.seq, t: m.t }, { except: client });
    });
  }
  onJoin(client) {
    this.state.players.set(client.sessionId, new Player());
  }
  onLeave(client) {
    this.state.players.delete(client.sessionId);
  }
}

const server = new Server({ transport: new WebSocketTransport(), gracefullyShutdown: true, greet: false });
server.define("battle", Battle);
server.define("lobby", Battle);
await server.listen(PORT, "127.0.0.1", BACKLOG);
await matchMaker.createRoom("lobby", {});
// STATS=1: a line every STATS_MS (default 1000) with the clients connected and the moves received so far (the benchmark reads how far a load tester got).
if (process.env.STATS === "1") {
  setInterval(async () => {
    const rooms = await matchMaker.query({});
    console.log(`clients ${rooms.reduce((n, r) => n + r.clients, 0)} rooms ${rooms.length} moves ${moves}`);
  }, Number(process.env.STATS_MS || 1000));
}
console.log(`colyseus reference room listening on 127.0.0.1:${PORT} (max ${MAX_CLIENTS} per room, patches every ${PATCH_MS} ms)`);
