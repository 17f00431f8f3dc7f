# The benchmark's player, as Locust runs it (locust.contrib.socketio's SocketIOUser on
# python-socketio): logs in over HTTP, joins a room over Socket.IO, moves every 100 ms
# and receives the room's broadcasts. bench/bots/bots-vs-peers.sh.
import itertools
import json
import random
import time
import urllib.request

import gevent
from locust import task, constant
from locust.contrib.socketio import SocketIOUser

ids = itertools.count(1)


class Player(SocketIOUser):
    wait_time = constant(0)

    def on_start(self):
        self.id = next(ids)
        host = self.host.rstrip("/")
        body = json.dumps({"user": f"locust{self.id}"}).encode()
        request = urllib.request.Request(host + "/login", body, {"Content-Type": "application/json"})
        token = json.load(urllib.request.urlopen(request))["token"]
        self.sio.on("moved", lambda move: None, namespace="/game")
        self.sio.connect(host, namespaces=["/game"], auth={"token": token}, transports=["websocket"], wait_timeout=30)
        self.seq = 0

    @task
    def move(self):
        started = time.monotonic()
        self.seq += 1
        self.sio.emit("move", {"from": self.id, "seq": self.seq, "t": 0, "x": random.randint(0, 1000), "y": random.randint(0, 1000)}, namespace="/game")
        gevent.sleep(max(0.0, 0.1 - (time.monotonic() - started)))
