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
of the same block size and, up to 512 MiB, the same bytes, grouped like the
context's so that each OSS holds the same share, into a buffer touched
beforehand; the median of five gets, the best of them beside it as
transport_best_gbps; transport_blocks_per_ost the shares). transport_fraction = restore GB/s / transport_gbps:
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


def tier(address, transport="tcp", tenant=None):
    """A KV tier client; tenant "NAME:KEYFILE" connects as that tenant, with
    the kv capability its authenticated session gets from the MDS (a
    capability lives minutes: ask for one per phase, as here)."""
    from stripefs import kv
    if not tenant:
        return kv.connect(address, transport=transport)
    import stripefs
    name, keyfile = tenant.split(":", 1)
    with stripefs.connect(address, tenant=name, keyfile=keyfile) as fs:
        cap = fs.kv_capability()
    return kv.connect(address, transport=transport, capability=cap)


def connector(kvc, cfg, namespace):
    from stripefs import kv_connector
    shape = (2, cfg.chunk, cfg.heads, cfg.d // cfg.heads)
    return kv_connector.StripeFSConnector(kvc, namespace=namespace, layers=cfg.layers,
                                          chunk_tokens=cfg.chunk, block_shape=shape,
                                          salt=b"bench", model="kv-restore-%d" % cfg.seed,
                                          layout="fp32 L%d d%d h%d" % (cfg.layers, cfg.d, cfg.heads))


def store(model, cfg, connect, tokens, namespace):
    """One forward of all of tokens from scratch: the prefill, timed, and the
    full recompute the restore is checked against (the last token's logits:
    causal attention, so the prompt's KV is that of tokens[:-1] alone). The
    KV of tokens[:-1] is stored through connect(). Returns (prefill s,
    store s, bytes, logits)."""
    t0 = time.monotonic()
    full, kvs = model(tokens)
    prefill = time.monotonic() - t0
    conn = connector(connect(), cfg, namespace)
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


def raw_rate(kvc, cfg, nbytes, namespace, groups, cap=512 << 20, runs=5):
    """The raw rate of the tier in this run: the same block size and (up to
    cap) the same bytes placed on the same OSTs as the context's, multi_put
    then `runs` multi_gets into a buffer touched beforehand (as the pooled
    restore's). groups: the context's chunk keys; block i is grouped like
    the context's block i (layer-major within each chunk), so each OST holds
    the same share of the raw blocks as of the context's: placement by chunk
    is uneven (at 16k, 35 of 64 chunks on one of 2 OSTs) and a batch ends
    with its busiest OST. Returns (median, best) GB/s and the raw blocks
    per OST."""
    block = 2 * cfg.chunk * cfg.d * 4  # a chunk of one layer, K and V, fp32
    n = max(1, min(nbytes, cap) // block)
    ns = kvc.namespace(namespace + "-raw", block_size=block)
    keys = [b"raw-%d" % i for i in range(n)]
    grp = [groups[(i // cfg.layers) % len(groups)] for i in range(n)]
    ns.multi_put(keys, [np.full(block, i % 251, dtype=np.uint8) for i in range(n)], groups=grp)
    buf = np.ones((n, block), dtype=np.uint8)  # touched: no page faults in the gets
    secs = []
    for _ in range(runs):
        t0 = time.monotonic()
        hits = ns.multi_get(keys, [buf[i] for i in range(n)], groups=grp)
        secs.append(time.monotonic() - t0)
    ns.remove(keys, groups=grp)
    if not all(hits) or any(buf[i, -1] != i % 251 for i in range(n)):
        raise RuntimeError("the raw transport run lost blocks (tier too small?)")
    per_ost = {}
    for g in grp:
        o = kvc.place(g, group=g)
        per_ost[o] = per_ost.get(o, 0) + 1
    return (n * block / statistics.median(secs) / 1e9, n * block / min(secs) / 1e9,
            sorted(per_ost.values(), reverse=True))


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
    model = Model(cfg).eval()
    tokens = prompt(cfg, a.child)
    kvc = tier(a.address, a.transport, a.tenant[0] if a.tenant else None)
    dest = pool(cfg, a.child) if a.pooled else None
    restored, decode, matched, logits = restore(model, cfg, kvc, tokens, a.namespace, dest)
    np.save(a.out, logits.numpy())
    print(json.dumps({"restore_seconds": restored, "decode_seconds": decode,
                      "matched_tokens": matched}))


def partial(model, cfg, kvc, tokens, namespace, at=0.75):
    """A prompt that diverges from the stored one at `at` of its length: the
    tier gives the chunks before the divergence, the rest is prefilled on
    top of them; against the full prefill of the new prompt, logits
    compared. Returns a dict of partial_* figures."""
    n = tokens.shape[0] - 1
    k = int(n * at)
    tail = torch.randint(0, cfg.vocab, (n + 1 - k,),
                         generator=torch.Generator().manual_seed(7))
    tail[0] = (tokens[k] + 1) % cfg.vocab  # diverges exactly at k
    p2 = torch.cat([tokens[:k], tail])
    conn = connector(kvc, cfg, namespace)
    t0 = time.monotonic()
    loaded = conn.start_load_kv(p2[:-1].tolist())
    m = loaded.tokens
    past = [torch.from_numpy(loaded.layer(l)) for l in range(cfg.layers)]
    logits, _ = model(p2[m:], past if m else None)
    hit = time.monotonic() - t0
    t0 = time.monotonic()
    full, _ = model(p2)
    recompute = time.monotonic() - t0
    diff = (logits - full).abs().max().item()
    return {"partial_tokens": n, "partial_diverge_at": k, "partial_matched_tokens": m,
            "partial_seconds": hit, "partial_recompute_seconds": recompute,
            "partial_speedup": recompute / hit, "partial_max_logit_diff": diff,
            "partial_logits_match": diff <= 1e-5 * max(1.0, full.abs().max().item())}


def other_tenant(address, cfg, tokens, namespace, transport, tenant_b):
    """Tenant B asks for tenant A's prompt with the same tokens, salt, model
    and layout (so the same keys): every chunk must miss, B's raw get of A's
    first block must miss without a byte of A's, and a capability with one
    byte changed must be refused. Returns a dict of tenant_* figures."""
    from stripefs import kv
    ids = tokens[:-1].tolist()
    kvb = tier(address, transport, tenant_b)
    conn = connector(kvb, cfg, namespace)
    matched = conn.get_num_matched_tokens(ids)
    loaded = conn.start_load_kv(ids).tokens
    chunk0 = conn._chunks(ids)[0]
    ns = kvb.namespace(namespace, block_size=cfg.chunk * 2 * cfg.d * 4)
    buf = np.full(cfg.chunk * 2 * cfg.d, 12345.0, dtype=np.float32)
    hit = ns.get_into(kv.block_key(chunk0, 0), buf, group=chunk0)
    untouched = bool((buf == 12345.0).all())
    name, keyfile = tenant_b.split(":", 1)
    import stripefs
    with stripefs.connect(address, tenant=name, keyfile=keyfile) as fs:
        cap = bytearray(fs.kv_capability())
    cap[len(cap) // 2] ^= 0x01
    try:
        forged = kv.connect(address, transport=transport, capability=bytes(cap))
        fns = forged.namespace(namespace, block_size=cfg.chunk * 2 * cfg.d * 4)
        forged_hit = fns.get_into(kv.block_key(chunk0, 0), buf, group=chunk0)
        refused = "not refused (hit=%s)" % forged_hit
    except (OSError, RuntimeError) as e:
        refused = str(e)
    return {"tenant_b_matched_tokens": matched, "tenant_b_loaded_tokens": loaded,
            "tenant_b_raw_get_hit": bool(hit), "tenant_b_buffer_untouched": untouched,
            "forged_capability_error": refused}


def simulate(requests, capacity, policy):
    """Hit rate of a cache of `capacity` contexts over the request sequence:
    "lru", or "opt" (Belady: evict the one used farthest ahead)."""
    held, hits, last = [], 0, {}
    for t, c in enumerate(requests):
        if c in held:
            hits += 1
            held.remove(c)
            held.append(c)
            continue
        if len(held) >= capacity:
            if policy == "lru":
                held.pop(0)
            else:
                def next_use(x):
                    for u in range(t + 1, len(requests)):
                        if requests[u] == x:
                            return u
                    return len(requests)
                held.remove(max(held, key=next_use))
        held.append(c)
    return hits / len(requests)


def simulate_groups(requests, groups_of, ost_of, per_ost, policy, protected_share=0.8):
    """The tier's own shape: a context is a hit only if every one of its
    groups (chunks) is on its OST; each OST holds per_ost groups; "lru", or
    "slru" as oss/kv/kv_index.h (a new group on probation, a hit moves it to
    protected, which keeps at most protected_share of the OST; victims from
    probation first). A miss stores the context's groups again."""
    import collections
    prob = collections.defaultdict(collections.OrderedDict)  # ost -> group -> None (LRU first)
    prot = collections.defaultdict(collections.OrderedDict)
    cap_prot = int(per_ost * protected_share)
    hits = 0
    for c in requests:
        gs = groups_of[c]
        present = [g in prob[ost_of[g]] or g in prot[ost_of[g]] for g in gs]
        for g, here in zip(gs, present):  # the gets touch what is there
            if not here:
                continue
            o = ost_of[g]
            if policy == "lru":
                prob[o].move_to_end(g)
                continue
            prob[o].pop(g, None)
            prot[o].pop(g, None)
            prot[o][g] = None
            while len(prot[o]) > cap_prot:
                old, _ = prot[o].popitem(last=False)
                prob[o][old] = None
        if all(present):
            hits += 1
            continue
        for g in gs:  # the miss stores every group again
            o = ost_of[g]
            if g in prob[o] or g in prot[o]:
                (prot[o] if g in prot[o] else prob[o]).move_to_end(g)
                continue
            while len(prob[o]) + len(prot[o]) >= per_ost:
                victims = [x for x in (prob[o] or prot[o]) if x not in gs]
                if not victims:
                    break
                (prob[o] if prob[o] else prot[o]).pop(victims[0])
            prob[o][g] = None
    return hits / len(requests)


def zipf(address, cfg, n, contexts, requests, s, capacity, namespace, transport, tenant,
         seed=11):
    """`contexts` prompts of n tokens, asked for `requests` times in a Zipf(s)
    order (seeded); a hit restores every chunk of the prompt, a miss (or a
    partial one) stores its KV again, as an engine would after the prefill.
    The tier's capacity is the cluster's (the sitting sizes it for
    `capacity` contexts); LRU and the optimal (Belady) cache of `capacity`
    contexts over the same order are beside it. Returns zipf_* figures."""
    import random
    model = Model(cfg).eval()
    prompts = [prompt(cfg, n, seed=100 + i) for i in range(contexts)]
    t0 = time.monotonic()
    kvs = [model(p)[1] for p in prompts]
    prefill = (time.monotonic() - t0) / contexts
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) ** s for i in range(contexts)]
    order = rng.choices(range(contexts), weights=weights, k=requests)
    kvc = tier(address, transport, tenant)
    conn = connector(kvc, cfg, namespace)
    dest = pool(cfg, n)
    hits = tokens_hit = 0
    t0 = time.monotonic()
    for c in order:
        ids = prompts[c][:-1].tolist()
        got = conn.start_load_kv(ids, dest=dest).tokens
        tokens_hit += got
        if got == n:
            hits += 1
            continue
        for layer, kv in enumerate(kvs[c]):
            conn.save_kv_layer(ids, layer, kv[:, :n].numpy())
        conn.wait_for_save()
    secs = time.monotonic() - t0
    groups = [conn._chunks(p[:-1].tolist()) for p in prompts]
    ost_of = {g: kvc.place(g, group=g) for gs in groups for g in gs}
    per_ost = capacity * len(groups[0]) // len(kvc.osts)
    return {"zipf_contexts": contexts, "zipf_requests": requests, "zipf_s": s,
            "zipf_tokens": n, "zipf_hit_rate": hits / requests,
            "zipf_token_hit_rate": tokens_hit / (n * requests),
            "zipf_capacity_contexts": capacity,
            "zipf_lru_hit_rate": simulate(order, capacity, "lru"),
            "zipf_optimal_hit_rate": simulate(order, capacity, "opt"),
            "zipf_distinct": len(set(order)), "zipf_seconds": secs,
            # the same with the tier's placement of chunks on OSTs and an even share per OST
            "zipf_group_lru_hit_rate": simulate_groups(order, groups, ost_of, per_ost, "lru"),
            "zipf_group_slru_hit_rate": simulate_groups(order, groups, ost_of, per_ost, "slru"),
            "zipf_prefill_seconds": prefill}


def run(address, cfg, n, namespace, transport="tcp", pooled=False, restores=3, tenants=(),
        partial_at=0.75):
    """One context: prefill + store here, then `restores` restores, each in a
    new process, compared with the recompute; the median restore counts.
    Then (partial_at > 0) a prompt diverging at partial_at, and with two
    tenants ("NAME:KEYFILE") the second one's view of the first's blocks."""
    tenant = tenants[0] if tenants else None
    model = Model(cfg).eval()
    tokens = prompt(cfg, n)
    prefill, stored, nbytes, full = store(model, cfg, lambda: tier(address, transport, tenant),
                                          tokens, namespace)
    runs, diff = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.npy")
        argv = [sys.executable, os.path.abspath(__file__), address, "--child", str(n),
                "--namespace", namespace, "--out", out, "--transport", transport] + cfg.args()
        argv += ["--pooled"] if pooled else []
        argv += ["--tenant", tenant] if tenant else []
        for _ in range(max(1, restores)):
            r = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True)
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
            diff = max(diff, (torch.from_numpy(np.load(out)) - full).abs().max().item())
    kvc = tier(address, transport, tenant)
    groups = connector(kvc, cfg, namespace)._chunks(tokens[:-1].tolist())
    raw, raw_best, raw_per_ost = raw_rate(kvc, cfg, nbytes, namespace, groups)
    restored = statistics.median(x["restore_seconds"] for x in runs)
    r = {"transport_gbps": raw, "transport_best_gbps": raw_best,
         "transport_blocks_per_ost": raw_per_ost,
         "transport_fraction": nbytes / restored / 1e9 / raw, "tokens": n,
         "prefill_seconds": prefill, "store_seconds": stored,
         "store_gbps": nbytes / stored / 1e9, "restore_seconds": restored,
         "restore_runs": [x["restore_seconds"] for x in runs],
         "restore_gbps": nbytes / restored / 1e9,
         "decode_seconds": statistics.median(x["decode_seconds"] for x in runs),
         "kv_bytes": nbytes, "speedup": prefill / restored, "max_logit_diff": diff,
         "logits_match": diff <= 1e-5 * max(1.0, full.abs().max().item()),
         "matched_tokens": min(x["matched_tokens"] for x in runs), "pooled": pooled}
    if partial_at > 0:
        r.update(partial(model, cfg, kvc, tokens, namespace, partial_at))
    if len(tenants) > 1:
        r.update(other_tenant(address, cfg, tokens, namespace, transport, tenants[1]))
    return r


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
    ap.add_argument("--tenant", action="append", default=[], metavar="NAME:KEYFILE",
                    help="store and restore as this tenant (a cluster with a key); a second "
                         "--tenant must miss the first's blocks and a forged capability is refused")
    ap.add_argument("--partial-at", type=float, default=0.75,
                    help="a prompt diverging at this fraction is restored and completed "
                         "(0: skip; default 0.75)")
    ap.add_argument("--zipf", type=int, default=0, metavar="CONTEXTS",
                    help="instead: CONTEXTS prompts asked for in a Zipf order (hit rate)")
    ap.add_argument("--zipf-requests", type=int, default=200)
    ap.add_argument("--zipf-s", type=float, default=1.0)
    ap.add_argument("--zipf-capacity", type=int, default=0,
                    help="contexts the tier holds (the cluster's; for the LRU and optimal "
                         "figures beside it; default CONTEXTS / 2)")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args()
    cfg = Config(a.layers, a.d, a.heads, a.vocab, a.max_tokens, a.chunk, a.q_chunk)
    torch.set_grad_enabled(False)
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.child:
        return child(a, cfg)
    if a.zipf:
        for n in a.tokens:
            r = zipf(a.address, cfg, n, a.zipf, a.zipf_requests, a.zipf_s,
                     a.zipf_capacity or a.zipf // 2, a.namespace + "-zipf", a.transport,
                     a.tenant[0] if a.tenant else None)
            print(json.dumps(r) if a.json else
                  "%d contexts of %d tokens, %d Zipf(%.2f) requests: hit rate %.2f (tokens "
                  "%.2f); LRU of %d contexts %.2f, optimal %.2f" %
                  (a.zipf, n, a.zipf_requests, a.zipf_s, r["zipf_hit_rate"],
                   r["zipf_token_hit_rate"], r["zipf_capacity_contexts"],
                   r["zipf_lru_hit_rate"], r["zipf_optimal_hit_rate"]))
        return
    for n in a.tokens:
        r = run(a.address, cfg, n, a.namespace, a.transport, a.pooled, a.restores, a.tenant,
                a.partial_at)
        if a.json:
            print(json.dumps(r))
        else:
            print("%6d tokens: prefill %7.3f s  store %.3f GB/s  restore %.3f s (%.3f GB/s)  "
                  "speedup %.1fx  max |logit diff| %.2e  match %s  transport %.3f GB/s (%.0f%%)" %
                  (n, r["prefill_seconds"], r["store_gbps"], r["restore_seconds"],
                   r["restore_gbps"], r["speedup"], r["max_logit_diff"], r["logits_match"],
                   r["transport_gbps"], 100 * r["transport_fraction"]))
            if "partial_matched_tokens" in r:
                print("        diverging at %d: %d tokens from the tier + the rest %.3f s against "
                      "%.3f s recomputed (%.1fx), match %s" %
                      (r["partial_diverge_at"], r["partial_matched_tokens"], r["partial_seconds"],
                       r["partial_recompute_seconds"], r["partial_speedup"],
                       r["partial_logits_match"]))
            if "tenant_b_matched_tokens" in r:
                print("        second tenant: %d tokens matched, raw get hit %s, forged "
                      "capability: %s" % (r["tenant_b_matched_tokens"], r["tenant_b_raw_get_hit"],
                                          r["forged_capability_error"]))


if __name__ == "__main__":
    main()
