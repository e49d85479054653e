#!/usr/bin/env python3
"""Restore vs recompute of a prompt's attention KV (issue 19), on a CPU.

A small PyTorch transformer (default 8 layers, d=512, 8 heads, fp32: 32 KiB
of KV per token; random weights from a fixed seed; attention computed in
query chunks so a long context fits in memory) prefills a random prompt; its
K/V go to the KV tier through stripefs.kv_connector (one 1 MiB block per
256-token chunk and layer, grouped by chunk). A new process then builds the
same model, looks the prompt up, fetches every chunk, attaches it and runs
one decode step; its logits are compared with a full recompute of the prompt
plus that token in the first process.

    scripts/cluster.sh up --oss 2 --dir /tmp/kv   # OSSes need --kv-capacity (see below)
    PYTHONPATH=build/client/python /usr/bin/python3 bench/kv_restore.py ADDR \\
        --tokens 4096 8192 [--json]

Prints per context: prefill seconds (one forward of the prompt and the
next token from scratch, which is also the recompute the logits are checked
against), store GB/s, restore seconds (fetch, with the lookup folded in, and
attach, each in a new process; the median of --restores of them) and GB/s,
the speedup, and the largest logit difference of any of them, and the
tier's raw rate in the same run (transport_gbps: multi_put then multi_get
of the same block size and, up to 512 MiB, the same bytes, into a buffer
touched beforehand; the median of five gets, the best of them beside it as
transport_best_gbps). transport_fraction = restore GB/s / transport_gbps:
medians on both sides, so that one lucky or unlucky run weighs on neither.
--pooled restores into a buffer allocated and touched before the clock
starts (start_load_kv's dest=, as a server reusing one pooled buffer across
requests would), so the restore does not pay the page faults of a fresh
np.empty. The tier needs --kv-capacity >= 2 x 32 KiB x tokens per OSS share
(the context and the raw run's blocks). Importable:
tests/python/kv_restore_test.py runs a tiny form.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from torch import nn


class Config:
    def __init__(self, layers=8, d=512, heads=8, vocab=32000, max_tokens=16384 + 1,
                 chunk=256, q_chunk=512, seed=0):
        self.layers, self.d, self.heads, self.vocab = layers, d, heads, vocab
        self.max_tokens, self.chunk, self.q_chunk, self.seed = max_tokens, chunk, q_chunk, seed

    def args(self):
        return ["--layers", str(self.layers), "--d", str(self.d), "--heads", str(self.heads),
                "--vocab", str(self.vocab), "--chunk", str(self.chunk),
                "--q-chunk", str(self.q_chunk), "--max-tokens", str(self.max_tokens)]


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.h, self.dh = cfg.heads, cfg.d // cfg.heads
        self.q_chunk = cfg.q_chunk
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d), nn.LayerNorm(cfg.d)
        self.qkv = nn.Linear(cfg.d, 3 * cfg.d)
        self.out = nn.Linear(cfg.d, cfg.d)
        self.mlp = nn.Sequential(nn.Linear(cfg.d, 4 * cfg.d), nn.GELU(), nn.Linear(4 * cfg.d, cfg.d))

    def forward(self, x, past=None):
        """x: (T, d) new tokens at positions len(past).. ; past: (2, P, h, dh)
        or None. Returns (x, kv of all P + T tokens)."""
        t = x.shape[0]
        q, k, v = self.qkv(self.ln1(x)).view(t, 3, self.h, self.dh).unbind(1)
        if past is not None:
            k = torch.cat([past[0], k])
            v = torch.cat([past[1], v])
        p = k.shape[0] - t
        kh, vh = k.transpose(0, 1), v.transpose(0, 1)  # (h, P+T, dh)
        scale = self.dh ** -0.5
        outs = []
        for a in range(0, t, self.q_chunk):  # query chunks: memory O(q_chunk x context)
            b = min(t, a + self.q_chunk)
            s = torch.matmul(q[a:b].transpose(0, 1), kh.transpose(1, 2)) * scale
            pos = torch.arange(p + a, p + b).unsqueeze(1)
            s = s.masked_fill(torch.arange(p + t).unsqueeze(0) > pos, float("-inf"))
            outs.append(torch.matmul(torch.softmax(s, -1), vh).transpose(0, 1))
        att = torch.cat(outs).reshape(t, -1)
        x = x + self.out(att)
        x = x + self.mlp(self.ln2(x))
        # (2, P+T, h, dh), viewing (P+T, 2, h, dh) memory: the connector's block layout,
        # so the store sends it and the restore attaches it without a copy.
        return x, torch.stack([k, v], 1).transpose(0, 1)


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        torch.manual_seed(cfg.seed)
        self.emb = nn.Embedding(cfg.vocab, cfg.d)
        self.pos = nn.Embedding(cfg.max_tokens, cfg.d)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln = nn.LayerNorm(cfg.d)
        self.head = nn.Linear(cfg.d, cfg.vocab, bias=False)

    @torch.no_grad()
    def forward(self, tokens, past=None):
        """Logits of the last token and every layer's KV (2, P+T, h, dh)."""
        start = 0 if past is None else past[0].shape[1]
        x = self.emb(tokens) + self.pos(torch.arange(start, start + tokens.shape[0]))
        kvs = []
        for i, blk in enumerate(self.blocks):
            x, kv = blk(x, None if past is None else past[i])
            kvs.append(kv)
        return self.head(self.ln(x[-1])), kvs


def prompt(cfg, n, seed=1):
    return torch.randint(0, cfg.vocab, (n + 1,), generator=torch.Generator().manual_seed(seed))


def connector(kvc, cfg, namespace):
    from stripefs import kv_connector
    shape = (2, cfg.chunk, cfg.heads, cfg.d // cfg.heads)
    return kv_connector.StripeFSConnector(kvc, namespace=namespace, layers=cfg.layers,
                                          chunk_tokens=cfg.chunk, block_shape=shape,
                                          salt=b"bench", model="kv-restore-%d" % cfg.seed,
                                          layout="fp32 L%d d%d h%d" % (cfg.layers, cfg.d, cfg.heads))


def store(model, cfg, kvc, tokens, namespace):
    """One forward of all of tokens from scratch: the prefill, timed, and the
    full recompute the restore is checked against (the last token's logits:
    causal attention, so the prompt's KV is that of tokens[:-1] alone). The
    KV of tokens[:-1] is stored. Returns (prefill s, store s, bytes, logits)."""
    t0 = time.monotonic()
    full, kvs = model(tokens)
    prefill = time.monotonic() - t0
    conn = connector(kvc, cfg, namespace)
    ids = tokens[:-1].tolist()
    n = len(ids)
    t0 = time.monotonic()
    for layer, kv in enumerate(kvs):
        conn.save_kv_layer(ids, layer, kv[:, :n].numpy())
    conn.wait_for_save()
    stored = time.monotonic() - t0
    return prefill, stored, sum(kv[:, :n].numel() * 4 for kv in kvs), full


def pool(cfg, n):
    """A pooled destination for n tokens, as a server would keep one warm
    across requests: allocated and touched before any restore is timed."""
    dest = np.empty((cfg.layers, n, 2, cfg.heads, cfg.d // cfg.heads), dtype=np.float32)
    dest.fill(0)
    return dest


def raw_rate(kvc, cfg, nbytes, namespace, cap=512 << 20, runs=5):
    """The raw rate of the tier in this run: the same block size and (up to
    cap) the same bytes, multi_put then `runs` multi_gets into a buffer
    touched beforehand (as the pooled restore's). (median, best) GB/s."""
    block = 2 * cfg.chunk * cfg.d * 4  # a chunk of one layer, K and V, fp32
    n = max(1, min(nbytes, cap) // block)
    ns = kvc.namespace(namespace + "-raw", block_size=block)
    keys = [b"raw-%d" % i for i in range(n)]
    ns.multi_put(keys, [np.full(block, i % 251, dtype=np.uint8) for i in range(n)])
    buf = np.ones((n, block), dtype=np.uint8)  # touched: no page faults in the gets
    secs = []
    for _ in range(runs):
        t0 = time.monotonic()
        hits = ns.multi_get(keys, [buf[i] for i in range(n)])
        secs.append(time.monotonic() - t0)
    ns.remove(keys)
    if not all(hits) or any(buf[i, -1] != i % 251 for i in range(n)):
        raise RuntimeError("the raw transport run lost blocks (tier too small?)")
    return n * block / statistics.median(secs) / 1e9, n * block / min(secs) / 1e9


def restore(model, cfg, kvc, tokens, namespace, dest=None):
    """Lookup + fetch + attach of the prompt's KV, then one decode step of
    the last token; into dest (see pool) if given, else a fresh array.
    Returns (restore s, decode s, matched tokens, logits)."""
    conn = connector(kvc, cfg, namespace)
    ids = tokens[:-1].tolist()
    t0 = time.monotonic()
    loaded = conn.start_load_kv(ids, dest=dest)
    past = [torch.from_numpy(loaded.layer(l)) for l in range(cfg.layers)]
    restored = time.monotonic() - t0
    if loaded.tokens != len(ids):
        raise RuntimeError("the tier has %d of %d prompt tokens" % (loaded.tokens, len(ids)))
    t0 = time.monotonic()
    logits, _ = model(tokens[-1:], past)
    return restored, time.monotonic() - t0, loaded.tokens, logits


def child(a, cfg):
    """The restoring process: same seed, same model, no state from the parent."""
    from stripefs import kv
    model = Model(cfg).eval()
    tokens = prompt(cfg, a.child)
    kvc = kv.connect(a.address, transport=a.transport)
    dest = pool(cfg, a.child) if a.pooled else None
    restored, decode, matched, logits = restore(model, cfg, kvc, tokens, a.namespace, dest)
    np.save(a.out, logits.numpy())
    print(json.dumps({"restore_seconds": restored, "decode_seconds": decode,
                      "matched_tokens": matched}))


def run(address, cfg, n, namespace, transport="tcp", pooled=False, restores=3):
    """One context: prefill + store here, then `restores` restores, each in a
    new process, compared with the recompute; the median restore counts."""
    from stripefs import kv
    model = Model(cfg).eval()
    tokens = prompt(cfg, n)
    kvc = kv.connect(address, transport=transport)
    prefill, stored, nbytes, full = store(model, cfg, kvc, tokens, namespace)
    runs, diff = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.npy")
        argv = [sys.executable, os.path.abspath(__file__), address, "--child", str(n),
                "--namespace", namespace, "--out", out, "--transport", transport] + cfg.args()
        argv += ["--pooled"] if pooled else []
        for _ in range(max(1, restores)):
            r = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True)
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
            diff = max(diff, (torch.from_numpy(np.load(out)) - full).abs().max().item())
    raw, raw_best = raw_rate(kvc, cfg, nbytes, namespace)
    restored = statistics.median(x["restore_seconds"] for x in runs)
    return {"transport_gbps": raw, "transport_best_gbps": raw_best,
            "transport_fraction": nbytes / restored / 1e9 / raw, "tokens": n,
            "prefill_seconds": prefill, "store_seconds": stored,
            "store_gbps": nbytes / stored / 1e9, "restore_seconds": restored,
            "restore_runs": [x["restore_seconds"] for x in runs],
            "restore_gbps": nbytes / restored / 1e9,
            "decode_seconds": statistics.median(x["decode_seconds"] for x in runs),
            "kv_bytes": nbytes, "speedup": prefill / restored, "max_logit_diff": diff,
            "logits_match": diff <= 1e-5 * max(1.0, full.abs().max().item()),
            "matched_tokens": min(x["matched_tokens"] for x in runs), "pooled": pooled}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("address")
    ap.add_argument("--tokens", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--q-chunk", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=16384 + 1)
    ap.add_argument("--namespace", default="kv-restore")
    ap.add_argument("--transport", default="tcp")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--restores", type=int, default=3,
                    help="restores, each in a new process; the median counts (default 3)")
    ap.add_argument("--pooled", action="store_true",
                    help="restore into a preallocated, touched buffer (no fresh page faults)")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    cfg = Config(a.layers, a.d, a.heads, a.vocab, a.max_tokens, a.chunk, a.q_chunk)
    torch.set_grad_enabled(False)
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.child:
        return child(a, cfg)
    for n in a.tokens:
        r = run(a.address, cfg, n, a.namespace, a.transport, a.pooled, a.restores)
        if a.json:
            print(json.dumps(r))
        else:
            print("%6d tokens: prefill %7.3f s  store %.3f GB/s  restore %.3f s (%.3f GB/s)  "
                  "speedup %.1fx  max |logit diff| %.2e  match %s  transport %.3f GB/s (%.0f%%)" %
                  (n, r["prefill_seconds"], r["store_gbps"], r["restore_seconds"],
                   r["restore_gbps"], r["speedup"], r["max_logit_diff"], r["logits_match"],
                   r["transport_gbps"], 100 * r["transport_fraction"]))


if __name__ == "__main__":
    main()
