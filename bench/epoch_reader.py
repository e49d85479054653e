#!/usr/bin/env python3
"""One epoch of a training loader's reads through a mount, timed (bench/sittings).

    epoch_reader.py ORDER K [HINT_CMD...]

K worker processes read whole files, worker w taking the entries w, w+K, ... of
the path list ORDER (as DistributedSampler splits an epoch). The clock starts once
the workers are up; HINT_CMD, if given (e.g. `sfs prefetch --list ORDER`), runs
first inside the timed span, so an order hint's hand-over is part of the epoch.
Prints "SECONDS BYTES".
"""
import multiprocessing as mp
import subprocess
import sys
import time


ORDER, K = [], 1  # set before the workers fork (they inherit them, nothing is sent)


def work(w):
    n = 0
    for p in ORDER[w::K]:
        with open(p, "rb", buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                n += len(b)
    return n


def main():
    global ORDER, K
    ORDER = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
    K = int(sys.argv[2])
    hint = sys.argv[3:]
    with mp.get_context("fork").Pool(K) as pool:
        pool.map(abs, range(K))  # the workers are up before the clock starts
        t = time.time()
        if hint:
            subprocess.run(hint, check=True, stdout=subprocess.DEVNULL)
        total = sum(pool.map(work, range(K)))
        print("%.3f %d" % (time.time() - t, total))


if __name__ == "__main__":
    main()
