#!/usr/bin/env bash
# aggro's Colyseus bots beside the official @colyseus/loadtest, same room
# (examples/colyseus: rooms of 50, patches every 50 ms), same behaviour (a
# move every 100 ms, the room broadcasts it), same server, one at a time.
# Server pinned to CPU 0, load generator to CPU 1. Per client count it prints
# how fast clients joined (from the server's own count) and the generator's
# CPU per client over a steady window once all have joined.
# Two rooms: moves change the state only (the issue's measured room; 500 and
# 1,000 clients), and moves broadcast to the room (~490 messages/s per client;
# 200 and 400 clients, below where the Node server saturates its core).
# aggro runs twice per count: looking at its sockets as soon as anything is
# ready (the default), and with --poll-every 1ms (fewer wake-ups; sends in
# 1 ms bunches, as the official tester's Node timers fire; each message still
# timed at its arrival by the kernel's receive timestamp) — and a third time as
# the same player written in Lua (examples/colyseus/colyseus-bot.lua: the
# protocol by hand, msgpack in the script), against the play file's CPU.
#   bash bench/colyseus-vs-loadtest.sh [SECS] [COUNTS] [BROADCAST_COUNTS] [TOOLS]
#   (default 15 s, 500,1000, 200,400, loadtest,aggro,aggro-1ms,aggro-lua)
source "$(dirname "$0")/release.sh"
python3 bench/colyseus_vs_loadtest.py "$aggro" "${1:-15}" "${2:-500,1000}" "${3:-200,400}" "${4:-loadtest,aggro,aggro-1ms,aggro-lua}"
