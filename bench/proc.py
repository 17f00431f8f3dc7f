"""What the bench drivers read of processes, from /proc: CPU seconds (one process, or it and every
descendant), resident memory; and a free loopback port."""
import os
import re
import socket

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """User + system seconds of a process and its threads."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK


def cpu_split_s(pid):
    """User and system seconds of a process and its threads, apart."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) / TICK, int(rest[12]) / TICK


def tree(pid):
    """The process and all its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except OSError:
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def tree_cpu_s(pid):
    """CPU seconds of a process and its descendants (those gone already are not counted)."""
    total = 0.0
    for p in tree(pid):
        try:
            total += cpu_s(p)
        except OSError:
            pass
    return total


def tree_kernel_s(pid):
    """System seconds of a process and its descendants."""
    total = 0.0
    for p in tree(pid):
        try:
            total += cpu_split_s(p)[1]
        except OSError:
            pass
    return total


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
