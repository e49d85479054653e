"""A KV connector of the shape of vLLM's KVConnectorBase_V1, over stripefs.kv.

A sketch of the integration (docs/kv.md "Connector"), with numpy arrays for
the engine's paged KV: the three calls an engine makes are

  save_kv_layer(tokens, layer, kv)   after a layer's forward: its K/V of every
                                     full chunk go to the tier, one block per
                                     (chunk, layer), grouped by chunk;
  get_num_matched_tokens(tokens)     at scheduling: how many prefix tokens the
                                     tier has (every layer of every leading
                                     chunk), with a lease so the load finds them;
  start_load_kv(tokens)              starts fetching those chunks, one
                                     multi_get per layer on a thread;
                                     wait_for_layer_load(l) / layer(l) give
                                     layer l when it has arrived, so the
                                     forward of layer 0 overlaps the rest.

A layer's KV is an array (2, tokens, heads, head_dim): K and V. Blocks land
straight in a (layers, chunks, 2, chunk, heads, head_dim) array (get_into,
no copy); layer(l) returns the (2, tokens, heads, head_dim) view the engine
attaches (a copy, as vLLM's copy into its own paged layout would be).
Saving slices each chunk out of the layer array (one copy per block: the
engine's layout is not block-contiguous).
"""
import concurrent.futures

import numpy as np

from . import kv as _kv

LEASE_MS = 30000  # from lookup to load


class Loaded:
    """The chunks start_load_kv is fetching."""

    def __init__(self, tokens, dest, futures):
        self.tokens = tokens
        self._dest = dest
        self._futures = futures

    def wait_for_layer_load(self, layer):
        hits = self._futures[layer].result()
        if not all(hits):
            raise RuntimeError("layer %d: %d of %d blocks gone since the lookup" %
                               (layer, hits.count(False), len(hits)))

    def layer(self, layer):
        self.wait_for_layer_load(layer)
        blocks = self._dest[layer]  # (chunks, 2, chunk, heads, head_dim)
        chunks, two, chunk = blocks.shape[:3]
        return np.moveaxis(blocks, 0, 1).reshape((two, chunks * chunk) + blocks.shape[3:])


class StripeFSConnector:
    def __init__(self, client, namespace, layers, chunk_tokens, block_shape,
                 dtype=np.float32, salt=b"", model="", layout=""):
        self.layers = layers
        self.chunk = chunk_tokens
        self.shape = tuple(block_shape)  # (2, chunk_tokens, heads, head_dim)
        if self.shape[1] != chunk_tokens:
            raise ValueError("block_shape[1] must be chunk_tokens")
        self.dtype = np.dtype(dtype)
        self.salt, self.model, self.layout = salt, model, layout
        size = int(np.prod(self.shape)) * self.dtype.itemsize
        self.ns = client.namespace(namespace, size)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)

    def _chunks(self, tokens):
        return _kv.chain_keys(list(tokens), chunk_tokens=self.chunk, salt=self.salt,
                              model=self.model, layout=self.layout)

    def save_kv_layer(self, tokens, layer, kv):
        chunks = self._chunks(tokens)
        keys = [_kv.block_key(c, layer) for c in chunks]
        data = [np.ascontiguousarray(kv[:, i * self.chunk:(i + 1) * self.chunk], dtype=self.dtype)
                for i in range(len(chunks))]
        self.ns.multi_put(keys, data, groups=chunks)

    def get_num_matched_tokens(self, tokens):
        chunks = self._chunks(tokens)
        keys = [_kv.block_key(c, l) for c in chunks for l in range(self.layers)]
        groups = [c for c in chunks for _ in range(self.layers)]
        found = self.ns.exists(keys, groups=groups, lease_ms=LEASE_MS)
        n = 0
        while n < len(chunks) and all(found[n * self.layers:(n + 1) * self.layers]):
            n += 1
        return n * self.chunk

    def start_load_kv(self, tokens):
        n = self.get_num_matched_tokens(tokens) // self.chunk
        chunks = self._chunks(tokens)[:n]
        dest = np.empty((self.layers, n) + self.shape, dtype=self.dtype)

        def load(layer):
            keys = [_kv.block_key(c, layer) for c in chunks]
            return self.ns.multi_get(keys, [dest[layer, i] for i in range(n)], groups=chunks)

        futures = [self._pool.submit(load, l) for l in range(self.layers)]
        return Loaded(n * self.chunk, dest, futures)
