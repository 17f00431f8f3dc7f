// The official load tester (@colyseus/loadtest) playing the same behaviour as
// `aggro arena swarm --mode colyseus`: join "battle", send a move {from, seq,
// t, x, y} every 100 ms, listen for the room's "moved" broadcasts. Used by
// bench/colyseus-vs-loadtest.sh as the peer.
//
//   node loadtest-bot.mjs --endpoint ws://127.0.0.1:2567 --room battle --numClients 500
import { cli } from "@colyseus/loadtest";
import { Client } from "@colyseus/sdk";

const every = Number(process.env.SEND_EVERY_MS || 100);

cli(async (options) => {
  const client = new Client(options.endpoint);
  const room = await client.joinOrCreate(options.roomName, {});
  const from = options.clientId;
  let seq = 0;
  let x = Math.random() * 1000, y = Math.random() * 1000;
  room.onMessage("moved", (m) => {
    // The observer's work aggro does too: the delay from the sender's send time.
    const delayUs = Number(process.hrtime.bigint() / 1000n) - m.t;
    if (delayUs < 0) throw new Error("a broadcast from the future");
  });
  const timer = setInterval(() => {
    seq += 1;
    x = Math.min(1000, Math.max(0, x + (Math.random() - 0.5) * 20));
    y = Math.min(1000, Math.max(0, y + (Math.random() - 0.5) * 20));
    room.send("move", { from, seq, t: Number(process.hrtime.bigint() / 1000n), x, y });
  }, every);
  room.onLeave(() => clearInterval(timer));
});
