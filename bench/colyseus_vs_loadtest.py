"""Driver of bench/colyseus-vs-loadtest.sh: for each client count, the
reference room with a fresh server per generator, the generator started,
joins timed from the server's own client count, then the generator's CPU
read from /proc over a steady window."""
import os, re, signal, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc import cpu_s, free_port, rss_mib  # noqa: E402

aggro, secs = sys.argv[1], float(sys.argv[2])
counts = {False: [int(c) for c in sys.argv[3].split(",")], True: [int(c) for c in sys.argv[4].split(",")]}
tools = sys.argv[5].split(",") if len(sys.argv) > 5 else ["loadtest", "aggro", "aggro-1ms", "aggro-lua"]
room = os.path.join(os.path.dirname(__file__), "..", "examples", "colyseus")


class Server:
    def __init__(self, broadcast):
        self.port = free_port()
        env = dict(os.environ, PORT=str(self.port), STATS="1", STATS_MS="100", BROADCAST="1" if broadcast else "0")
        self.p = subprocess.Popen(["taskset", "-c", "0", "node", "server.mjs"], cwd=room, env=env, stdout=subprocess.PIPE, text=True)
        self.clients = 0
        self.moves = 0
        os.set_blocking(self.p.stdout.fileno(), False)
        while "listening" not in (self.p.stdout.readline() or ""):
            time.sleep(0.05)

    def poll(self):
        for line in iter(self.p.stdout.readline, ""):
            m = re.match(r"clients (\d+) rooms \d+ moves (\d+)", line)
            if m:
                self.clients, self.moves = int(m.group(1)), int(m.group(2))
        return self.clients

    def stop(self):
        self.p.kill()
        self.p.wait()


def measure(name, argv, n, broadcast):
    server = Server(broadcast)
    started = time.monotonic()
    gen = subprocess.Popen(["taskset", "-c", "1"] + [a.replace("PORT", str(server.port)) for a in argv], cwd=room, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, TERM="xterm"))
    joined_at = None
    deadline = started + 60
    while time.monotonic() < deadline:
        if server.poll() >= n:
            joined_at = time.monotonic()
            break
        time.sleep(0.02)
    got = server.clients
    join_s = (joined_at or time.monotonic()) - started
    time.sleep(1)  # let the last joins settle
    server.poll()
    c0, s0, w0, m0 = cpu_s(gen.pid), cpu_s(server.p.pid), time.monotonic(), server.moves
    time.sleep(secs)
    server.poll()
    c1, s1, w1, m1 = cpu_s(gen.pid), cpu_s(server.p.pid), time.monotonic(), server.moves
    rss = rss_mib(gen.pid)
    still = server.poll()
    gen.send_signal(signal.SIGINT)
    try:
        gen.wait(timeout=10)
    except subprocess.TimeoutExpired:
        gen.kill()
        gen.wait()
    server.stop()
    gen_pct = (c1 - c0) / (w1 - w0) * 100
    row = dict(name=name, n=n, joined=got, join_s=join_s, joins_per_s=got / join_s, gen_pct=gen_pct, per_client_us=(c1 - c0) / (w1 - w0) / max(still, 1) * 1e6,
               server_pct=(s1 - s0) / (w1 - w0) * 100, rss=rss, clients_in_window=still,
               moves_per_s=(m1 - m0) / (w1 - w0), us_per_move=(c1 - c0) / max(m1 - m0, 1) * 1e6)
    print(f"  {name:22} {got:5}/{n} joined in {join_s:6.1f} s ({row['joins_per_s']:7.1f}/s) | generator {gen_pct:5.1f}% of a core, "
          f"{row['per_client_us']:6.1f} µs CPU per client-second, {row['us_per_move']:5.1f} µs per move the server took ({row['moves_per_s']:6.0f}/s), RSS {rss:5.0f} MiB "
          f"| server {row['server_pct']:5.1f}% ({still} clients)", flush=True)
    return row


print(f"colyseus reference room, rooms of 50, patches every 50 ms, a move every 100 ms per client; {secs:.0f} s window after all joined")
lua_bot = os.path.join(room, "colyseus-bot.lua")
for broadcast in (False, True):
    print("moves broadcast to the room (each client receives ~490 messages/s)" if broadcast else "moves change the state only (the issue's measured room: ~20 patches/s per client)")
    for n in counts[broadcast]:
        print(f"{n} clients:")
        rows = {}
        if "loadtest" in tools:
            rows["loadtest"] = measure("@colyseus/loadtest", ["node", "loadtest-bot.mjs", "--endpoint", "ws://127.0.0.1:PORT", "--room", "battle", "--numClients", str(n)], n, broadcast)
        swarm = [aggro, "arena", "swarm", "--server", "ws://127.0.0.1:PORT", "--ccu", str(n), "--duration", f"{secs + 200:.0f}s", "--quiet"]
        for tool, label, extra in (("aggro", "aggro arena swarm", ["--mode", "colyseus"]), ("aggro-1ms", "aggro, --poll-every 1ms", ["--mode", "colyseus", "--poll-every", "1ms"]),
                                   ("aggro-lua", "aggro, the same in Lua", ["--script", lua_bot])):
            if tool not in tools:
                continue
            out = f"/tmp/{tool}-colyseus-bench-{'broadcast-' if broadcast else ''}{n}.json"
            rows[tool] = ours = measure(label, swarm + extra + ["--out", out], n, broadcast)
            if broadcast:
                import json
                d = json.load(open(out))["totals"][0]["latency"]
                print(f"  {label}: broadcast delay p50 / p99 {d['p50_ns'] / 1e6:.2f} / {d['p99_ns'] / 1e6:.2f} ms", flush=True)
            official = rows.get("loadtest")
            if official and official["per_client_us"] > 0 and ours["per_client_us"] > 0:
                print(f"  bots per core, {label} ÷ official: {official['per_client_us'] / ours['per_client_us']:.1f}× per client, "
                      f"{official['us_per_move'] / ours['us_per_move']:.1f}× per move delivered; joins per second: {ours['joins_per_s']:.0f} vs {official['joins_per_s']:.1f}")
        play, lua = rows.get("aggro"), rows.get("aggro-lua")
        if play and lua and play["per_client_us"] > 0:
            print(f"  the Lua bot's CPU per client ÷ the play file's: {lua['per_client_us'] / play['per_client_us']:.2f}× "
                  f"(per move delivered {lua['us_per_move'] / play['us_per_move']:.2f}×)", flush=True)
