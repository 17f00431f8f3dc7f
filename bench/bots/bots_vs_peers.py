"""Driver of bench/bots/bots-vs-peers.sh: for each client count and each load
generator (aggro's Lua bots, Artillery's Socket.IO engine, Locust's
SocketIOUser), a fresh examples/bots/socketio-server.mjs pinned to CPU 0, the
generator pinned to CPU 1, joins counted by the server (GET /stats), then over
a steady window the generator's CPU (its whole process tree, from /proc) and
the moves the server received — the load delivered, which must be the
expected 10 per client-second for the figure to count."""
import json, os, signal, subprocess, sys, time, urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from proc import free_port, tree_cpu_s, tree_kernel_s  # noqa: E402

aggro, peers, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
counts = [int(c) for c in sys.argv[4].split(",")]
tools = sys.argv[5].split(",")
here = os.path.dirname(os.path.abspath(__file__))
examples = os.path.join(here, "..", "..", "examples", "bots")


class Server:
    def __init__(self):
        self.port = free_port()
        env = dict(os.environ, PORT=str(self.port), ROOM_SIZE="10")
        self.p = subprocess.Popen(["taskset", "-c", "0", "node", "socketio-server.mjs"], cwd=examples, env=env, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.stats()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the Socket.IO server did not listen")
                time.sleep(0.05)

    def stats(self):
        for attempt in range(5):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=10) as r:
                    return json.load(r)
            except TimeoutError:
                if attempt == 4:
                    raise

    def stop(self):
        self.p.kill()
        self.p.wait()


def command(tool, n, port):
    url = f"http://127.0.0.1:{port}"
    if tool == "aggro-joins":
        # Joins only (HTTP login, then the namespace), nothing sent after: how fast one process joins.
        return [aggro, "arena", "swarm", "--script", os.path.join(here, "join.lua"), "--server", f"ws://127.0.0.1:{port}", "--ccu", str(n),
                "--duration", f"{secs + 120:.0f}s", "--quiet", "--out", f"/tmp/{tool}-bots-bench-{n}.json"]
    if tool == "aggro" or tool.startswith("aggro-"):
        # aggro-DURATION (aggro-1ms, aggro-250us): the swarm looks at its sockets and timers at most once per
        # DURATION (fewer wake-ups; each message still timed at its arrival by the kernel's stamp), as Node's
        # event loop takes what is ready. aggro-read-DURATION (aggro-read-0): `--read-every DURATION`.
        if tool.startswith("aggro-read-"):
            poll = ["--read-every", tool.removeprefix("aggro-read-")]
        else:
            poll = ["--poll-every", tool.split("-", 1)[1]] if tool != "aggro" else []
        return [aggro, "arena", "swarm", "--script", os.path.join(here, "aggro.lua"), "--server", f"ws://127.0.0.1:{port}", "--ccu", str(n),
                "--duration", f"{secs + 120:.0f}s", "--quiet", "--out", f"/tmp/{tool}-bots-bench-{n}.json"] + poll
    if tool == "artillery":
        return [os.path.join(peers, "node_modules", ".bin", "artillery"), "run", "--quiet", "--target", url,
                "--overrides", json.dumps({"config": {"phases": [{"duration": max(1, n // 100), "arrivalCount": n}]}}), os.path.join(here, "artillery.yml")]
    if tool == "locust":
        return [os.path.join(peers, "venv", "bin", "locust"), "-f", os.path.join(here, "locustfile.py"), "--headless", "-u", str(n), "-r", "100",
                "--host", url, "--run-time", f"{secs + 120:.0f}s", "--only-summary", "--loglevel", "ERROR"]
    raise SystemExit(f"unknown tool {tool}")


def measure(tool, n):
    server = Server()
    try:
        return run(server, tool, n)
    finally:
        server.stop()


def run(server, tool, n):
    started = time.monotonic()
    gen = subprocess.Popen(["taskset", "-c", "1"] + command(tool, n, server.port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=dict(os.environ, TERM="xterm"), start_new_session=True)
    joined_at, deadline = None, started + 90
    while time.monotonic() < deadline:
        if server.stats()["connections"] >= n:
            joined_at = time.monotonic()
            break
        time.sleep(0.05)
    s = server.stats()
    join_s = (joined_at or time.monotonic()) - started
    time.sleep(2)  # the last joins settle, every client's timer runs
    s0, c0, w0, k0 = server.stats(), tree_cpu_s(gen.pid), time.monotonic(), tree_kernel_s(gen.pid)
    time.sleep(secs)
    s1, c1, w1, k1 = server.stats(), tree_cpu_s(gen.pid), time.monotonic(), tree_kernel_s(gen.pid)
    # aggro writes its result file when interrupted (its delivery check is read from it); the peers are stopped.
    os.killpg(gen.pid, signal.SIGINT if tool.startswith("aggro") else signal.SIGKILL)
    try:
        gen.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(gen.pid, signal.SIGKILL)
        gen.wait()
    window = w1 - w0
    clients = s1["connections"]
    moves_per_s = (s1["moves"] - s0["moves"]) / window
    delivered = moves_per_s / (n * 10)
    gen_pct = (c1 - c0) / window * 100
    per_client_us = (c1 - c0) / window / max(clients, 1) * 1e6
    kernel_us = (k1 - k0) / window / max(clients, 1) * 1e6
    kernel = f" (of it {kernel_us:6.1f} in the kernel)"
    bots_per_core = clients / max((c1 - c0) / window, 1e-9)
    if tool == "aggro-joins":
        print(f"  {tool:9} {s['connections']:5}/{n} joined in {join_s:5.1f} s: {s['connections'] / join_s:6.0f} joins/s, each after its HTTP login "
              f"({s['logins']} logins)", flush=True)
        return dict(tool=tool, n=n, joined=clients, per_client_us=0, bots_per_core=0, delivered=1, ok=False)
    ok = clients >= n and delivered >= 0.95
    if tool.startswith("aggro") and os.path.exists(f"/tmp/{tool}-bots-bench-{n}.json"):
        totals = json.load(open(f"/tmp/{tool}-bots-bench-{n}.json"))["extra"]["arena_swarm"]["totals"]
        c, d = totals["counters"], totals["delay"]
        print(f"  {tool:9} received {c['events_received']} moves of others, {c['reliable_missing']} missing, {c['reliable_disorder']} out of order; "
              f"delay p50 {d['p50_ns'] / 1e6:.2f} p99 {d['p99_ns'] / 1e6:.2f} ms (whole run)", flush=True)
    print(f"  {tool:9} {s['connections']:5}/{n} joined in {join_s:5.1f} s ({s['logins']} logins) | generator {gen_pct:5.1f}% of a core, "
          f"{per_client_us:6.1f} µs CPU per client-second{kernel}, {bots_per_core:8.0f} bots per core | moves {moves_per_s:6.0f}/s "
          f"({delivered * 100:5.1f}% of {n * 10}/s) | {'delivers' if ok else 'DOES NOT deliver the load'}", flush=True)
    return dict(tool=tool, n=n, joined=clients, per_client_us=per_client_us, bots_per_core=bots_per_core, delivered=delivered, ok=ok)


print(f"examples/bots Socket.IO game: HTTP login, rooms of 10, a move every 100 ms per client broadcast to its room; {secs:.0f} s window")
for n in counts:
    print(f"{n} clients:")
    rows = {t: measure(t, n) for t in tools}
    for mine in [t for t in rows if t.startswith("aggro") and t != "aggro-joins"]:
        ours = rows.get(mine)
        for t, r in rows.items():
            if not t.startswith("aggro") and ours and ours["ok"] and r["ok"]:
                print(f"  {mine} ÷ {t}: {r['per_client_us'] / ours['per_client_us']:.1f}× the bots per core")
