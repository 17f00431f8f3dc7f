// aggro's reference Colyseus room (issue 19): up to MAX_CLIENTS players in a
// MapSchema with x/y, state patches every PATCH_MS, and every "move" a player
// sends broadcast to the others as "moved" {from, seq, t} — t is the sender's
// timestamp, echoed untouched, so a receiver on the same machine measures the
// action-to-observer delay on the shared clock.
//
//   PORT=2567 MAX_CLIENTS=50 PATCH_MS=50 BACKLOG=4096 [BROADCAST=0] [STATS=1] [METRICS_PORT=9464] node server.mjs
//
// Rooms: "battle" (joinOrCreate makes a new one when every room is full),
// "lobby" (one room made at start; `join` is refused once it is full), and
// "guarded", a room that checks who joins as a game of your own would: its
// static onAuth wants the bearer token `secret-<name>` for the join option
// `name` (else HTTP 401 "bad token for <name>"), and its onJoin turns away
// every REFUSE_EVERY-th player ("<name> turned away"; 0, the default: none).
// LOG_JOINS=1 prints "joined <name>" for every player seated in it and
// "turned away <name>" for every one refused. "stalling" is the battle room
// whose server stalls its whole event loop for STALL_MS (default 200) every
// STALL_EVERY_MS (default 1000) once a player is in it, as a blocking call in a
// game's handler would, printing "stalled <ms> ms" each time.
import { Server, Room, ServerError, matchMaker } from "@colyseus/core";
import { WebSocketTransport } from "@colyseus/ws-transport";
import { schema, t } from "@colyseus/schema";
import { monitorEventLoopDelay } from "node:perf_hooks";
import http from "node:http";

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
const REFUSE_EVERY = process.env.REFUSE_EVERY ? env("REFUSE_EVERY", 0) : 0;
let guardedJoins = 0; // players that reached the guarded room's onJoin

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
    // A request answered to its sender alone, echoing its t: a play's `reply = "pong"` times the round trip.
    this.onMessage("ping", (client, m) => client.send("pong", { t: m?.t }));
  }
  onJoin(client) {
    this.state.players.set(client.sessionId, new Player());
  }
  onLeave(client) {
    this.state.players.delete(client.sessionId);
  }
}

class Stalling extends Battle {
  onCreate(options) {
    super.onCreate(options);
    const stall = env("STALL_MS", 200);
    this.clock.setInterval(() => {
      if (this.clients.length === 0) return;
      const until = Date.now() + stall;
      while (Date.now() < until) {}
      console.log(`stalled ${stall} ms`);
    }, env("STALL_EVERY_MS", 1000));
  }
}

class Guarded extends Battle {
  static async onAuth(token, options) {
    if (token !== `secret-${options.name}`) throw new ServerError(401, `bad token for ${options.name}`);
    return { name: options.name };
  }
  onJoin(client, options) {
    guardedJoins += 1;
    if (REFUSE_EVERY > 0 && guardedJoins % REFUSE_EVERY === 0) {
      if (process.env.LOG_JOINS === "1") console.log(`turned away ${options.name}`);
      throw new ServerError(403, `${options.name} turned away`);
    }
    if (process.env.LOG_JOINS === "1") console.log(`joined ${options.name}`);
    super.onJoin(client);
  }
}

const server = new Server({ transport: new WebSocketTransport(), gracefullyShutdown: true, greet: false });
server.define("battle", Battle);
server.define("lobby", Battle);
server.define("guarded", Guarded);
server.define("stalling", Stalling);
await server.listen(PORT, "127.0.0.1", BACKLOG);
await matchMaker.createRoom("lobby", {});
// STATS=1: a line every STATS_MS (default 1000) with the clients connected and the moves received so far (the benchmark reads how far a load tester got).
if (process.env.STATS === "1") {
  setInterval(async () => {
    const rooms = await matchMaker.query({});
    console.log(`clients ${rooms.reduce((n, r) => n + r.clients, 0)} rooms ${rooms.length} moves ${moves}`);
  }, Number(process.env.STATS_MS || 1000));
}
// METRICS_PORT: a Prometheus page at http://127.0.0.1:METRICS_PORT/metrics with the event loop's delay
// since the page was last read, as prom-client names it (aggro's --server-metrics reads it).
if (process.env.METRICS_PORT) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  http.createServer((req, res) => {
    const s = (ns) => (ns / 1e9).toFixed(6);
    res.end(`# TYPE nodejs_eventloop_lag_p99_seconds gauge\nnodejs_eventloop_lag_p99_seconds ${s(delay.percentile(99))}\n` +
      `# TYPE nodejs_eventloop_lag_max_seconds gauge\nnodejs_eventloop_lag_max_seconds ${s(delay.max)}\n` +
      `# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ${((process.cpuUsage().user + process.cpuUsage().system) / 1e6).toFixed(6)}\n`);
    delay.reset();
  }).listen(env("METRICS_PORT", 0), "127.0.0.1");
}
console.log(`colyseus reference room listening on 127.0.0.1:${PORT} (max ${MAX_CLIENTS} per room, patches every ${PATCH_MS} ms)`);
