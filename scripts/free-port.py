#!/usr/bin/env python3
"""Prints a TCP port free on every address given (default 127.0.0.1), and free PLUS higher too when
--plus is given (a Redis Cluster node's bus port is its port + 10000). The test scripts start their
servers on it.
    python3 scripts/free-port.py [--plus N] [ADDRESS…]"""
import random
import socket
import sys


def free(host, port):
    s = socket.socket()
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def main():
    args = sys.argv[1:]
    plus = 0
    if args[:1] == ["--plus"]:
        plus, args = int(args[1]), args[2:]
    hosts = args or ["127.0.0.1"]
    while True:
        port = random.randint(20000, 65535 - plus)
        if all(free(h, port) and (not plus or free(h, port + plus)) for h in hosts):
            print(port)
            return


if __name__ == "__main__":
    main()
