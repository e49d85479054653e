#!/usr/bin/env python3
"""Python reading the same files through the binding and through the FUSE
mount (issue 18: the binding should read >= 1.5x faster).

The files are those `sfs-bench train --prepare` wrote (DIR/s000000..,
4-256 KiB). Each pass reads every file whole, in a seeded shuffled order,
with T threads (the binding releases the GIL; so do os.preadv and
file.readinto). Passes alternate binding / mount ROUNDS times. The mount's
page cache is dropped for each file before its pass (posix_fadvise
DONTNEED, untimed), and the binding runs without a client cache, so both
fetch every byte from the OSSes; the OSSes' own page cache is warm for both.

    scripts/cluster.sh up --oss 2 --dir /tmp/cb --mount /tmp/cb/mnt   # prints ADDR
    build/tools/sfs-bench train --mds ADDR -o /t -n 4000 --prepare --epochs 1
    PYTHONPATH=build/client/python /usr/bin/python3 bench/binding_vs_fuse.py ADDR /t \\
        /tmp/cb/mnt -n 4000 [--threads 4] [--rounds 3] [--lapse-s 6] [--json]

Prints one line per pass (seconds, MiB/s, files/s) and the median ratio.
"""
import argparse
import json
import os
import random
import statistics
import threading
import time
import zlib

import stripefs


def name(i):
    return "s%06d" % i


def run_threads(n_threads, work):
    errors = []

    def body(t):
        try:
            work(t)
        except Exception as e:  # noqa: BLE001 - reported after the pass
            errors.append(e)

    threads = [threading.Thread(target=body, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


def read_whole(f, size):
    """The first size bytes of file object f (readinto), as a bytearray."""
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = f.readinto(view[got:])
        if not n:
            break
        got += n
    view.release()
    del buf[got:]
    return buf


def binding_pass(fs, d, order, n_threads, crcs):
    total = [0] * n_threads

    def work(t):
        for i in order[t::n_threads]:
            with fs.open(d + "/" + name(i), "rb") as f:
                buf = read_whole(f, f.size)
            total[t] += len(buf)
            crcs[i] = zlib.crc32(buf)

    t0 = time.perf_counter()
    run_threads(n_threads, work)
    return time.perf_counter() - t0, sum(total)


def mount_pass(mnt, order, n_threads, crcs, lapse_s):
    for i in order:  # the mount's page cache of each file, dropped untimed
        fd = os.open(mnt + "/" + name(i), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    # Those opens were kept by the mount under their leases (its open cache):
    # with lapse_s, the timed pass opens every file at the MDS, as the binding does.
    time.sleep(lapse_s)
    total = [0] * n_threads

    def work(t):
        for i in order[t::n_threads]:
            with open(mnt + "/" + name(i), "rb", buffering=0) as f:
                buf = read_whole(f, os.fstat(f.fileno()).st_size)
            total[t] += len(buf)
            crcs[i] = zlib.crc32(buf)

    t0 = time.perf_counter()
    run_threads(n_threads, work)
    return time.perf_counter() - t0, sum(total)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("address")
    ap.add_argument("dir", help="the files' directory inside StripeFS (absolute)")
    ap.add_argument("mount", help="the same file system's FUSE mount point")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--lapse-s", type=float, default=0,
                    help="wait after the untimed drop until the opens and leases it left lapse"
                         " (6 covers sfs-mds's 5 s lease); 0: the mount's pass may take over"
                         " the opens its drop kept")
    a = ap.parse_args()
    mnt_dir = a.mount.rstrip("/") + a.dir
    runs = {"binding": [], "mount": []}
    with stripefs.connect(a.address) as fs:
        for r in range(a.rounds):
            order = list(range(a.n))
            random.Random(a.seed * 1000003 + r).shuffle(order)
            crc_b, crc_m = {}, {}
            for mode in ("binding", "mount"):
                if mode == "binding":
                    secs, nbytes = binding_pass(fs, a.dir, order, a.threads, crc_b)
                else:
                    secs, nbytes = mount_pass(mnt_dir, order, a.threads, crc_m, a.lapse_s)
                runs[mode].append({"seconds": secs, "bytes": nbytes})
                if not a.json:
                    print("%-7s round %d: %.3f s  %7.1f MiB/s  %7.0f files/s"
                          % (mode, r + 1, secs, nbytes / secs / 2**20, a.n / secs))
            if crc_b != crc_m:
                raise SystemExit("the binding and the mount read different bytes")
    med = {m: statistics.median(x["seconds"] for x in v) for m, v in runs.items()}
    ratio = med["mount"] / med["binding"]
    if a.json:
        print(json.dumps({"runs": runs, "median_seconds": med, "binding_speedup": ratio}))
    else:
        print("median: binding %.3f s, mount %.3f s: the binding reads %.2fx faster"
              % (med["binding"], med["mount"], ratio))


if __name__ == "__main__":
    main()
