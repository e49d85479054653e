"""A KV connector of the shape of vLLM's KVConnectorBase_V1, over stripefs.kv.

A sketch of the integration (docs/kv.md "Connector"), with numpy arrays for
the engine's KV: the calls an engine makes are

  save_kv_layer(tokens, layer, kv)   after a layer's forward: its K/V of every
                                     full chunk go to the tier, one block per
                                     (chunk, layer), grouped by chunk; the put
                                     runs on a thread, wait_for_save() joins
                                     (the engine may reuse kv after that);
  get_num_matched_tokens(tokens)     at scheduling: how many prefix tokens the
                                     tier has (every layer of every leading
                                     chunk), with a lease so the load finds them;
  start_load_kv(tokens, dest=None)   starts fetching every full chunk of the
                                     prompt, all layers in one multi_get (the
                                     client keeps max_inflight blocks in flight
                                     over all OSSes); no lookup first: a miss is
                                     an answer of the get, and loaded.tokens is
                                     the leading chunks whose every layer hit.
                                     dest: a preallocated (layers, >= tokens,
                                     2, heads, head_dim) C-contiguous array of
                                     the connector's dtype (a pooled buffer
                                     reused across requests) to fetch into
                                     instead of a fresh np.empty; a wrong one
                                     is a ValueError before anything is asked.
                                     wait_for_layer_load(l) / layer(l) give
                                     layer l when it has arrived.

A layer's KV is an array (2, tokens, heads, head_dim): K and V. A block is
one chunk of one layer laid out token-major, (chunk, 2, heads, head_dim), so
that the blocks of a layer side by side are its KV in (tokens, 2, heads,
head_dim) memory: the load receives every block straight into a (layers,
tokens, 2, heads, head_dim) array (get_into, no copy), and layer(l) is a
transposed view of it, (2, tokens, heads, head_dim), no copy either. Saving
is without a copy when kv has that memory layout too (a (2, tokens, ...)
view of a (tokens, 2, ...) array, as bench/kv_restore.py's model makes it);
any other layout costs one copy per block.
"""
import concurrent.futures

import numpy as np

from . import kv as _kv

LEASE_MS = 30000  # from lookup to load
BLOCK_LAYOUT = "; blocks (chunk, 2, heads, head_dim)"  # part of every key: bytes differ per layout


class Loaded:
    """The chunks start_load_kv is fetching. tokens waits for the fetch."""

    def __init__(self, layers, chunk, chunks, dest, future):
        self._layers, self._chunk, self._n = layers, chunk, chunks
        self._dest = dest  # (layers, >= chunks * chunk, 2, heads, head_dim)
        self._future = future
        self._chunks = None

    def _wait(self):
        if self._chunks is None:
            hits = self._future.result()
            chunks = self._n
            n = 0  # leading chunks with every layer present
            while n < chunks and all(hits[l * chunks + n] for l in range(self._layers)):
                n += 1
            self._chunks = n
        return self._chunks

    @property
    def tokens(self):
        return self._wait() * self._chunk

    def wait_for_layer_load(self, layer):
        self._wait()

    def layer(self, layer):
        """Layer's KV of the matched prefix: a (2, tokens, heads, head_dim) view."""
        t = self._wait() * self._chunk
        return self._dest[layer, :t].swapaxes(0, 1)


class StripeFSConnector:
    def __init__(self, client, namespace, layers, chunk_tokens, block_shape,
                 dtype=np.float32, salt=b"", model="", layout=""):
        self.layers = layers
        self.chunk = chunk_tokens
        two, chunk, heads, head_dim = tuple(block_shape)  # (2, chunk_tokens, heads, head_dim)
        if chunk != chunk_tokens or two != 2:
            raise ValueError("block_shape must be (2, chunk_tokens, heads, head_dim)")
        self.block = (chunk, 2, heads, head_dim)
        self.dtype = np.dtype(dtype)
        self.salt, self.model, self.layout = salt, model, layout + BLOCK_LAYOUT
        size = int(np.prod(self.block)) * self.dtype.itemsize
        self.ns = client.namespace(namespace, size)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=4)
        self._saving = []

    def _chunks(self, tokens):
        return _kv.chain_keys(list(tokens), chunk_tokens=self.chunk, salt=self.salt,
                              model=self.model, layout=self.layout)

    def save_kv_layer(self, tokens, layer, kv):
        chunks = self._chunks(tokens)
        keys = [_kv.block_key(c, layer) for c in chunks]
        t = kv.swapaxes(0, 1)  # (tokens, 2, heads, head_dim): contiguous if kv is token-major
        data = [np.ascontiguousarray(t[i * self.chunk:(i + 1) * self.chunk], dtype=self.dtype)
                for i in range(len(chunks))]
        self._saving.append(self._pool.submit(self.ns.multi_put, keys, data, groups=chunks))

    def wait_for_save(self):
        """Joins every save_kv_layer so far; raises the first put's error."""
        saving, self._saving = self._saving, []
        for f in saving:
            f.result()

    def get_num_matched_tokens(self, tokens):
        chunks = self._chunks(tokens)
        keys = [_kv.block_key(c, l) for c in chunks for l in range(self.layers)]
        groups = [c for c in chunks for _ in range(self.layers)]
        found = self.ns.exists(keys, groups=groups, lease_ms=LEASE_MS)
        n = 0
        while n < len(chunks) and all(found[n * self.layers:(n + 1) * self.layers]):
            n += 1
        return n * self.chunk

    def check_dest(self, dest, tokens):
        """Raises ValueError unless dest can take `tokens` tokens of every layer."""
        want = (self.layers, tokens) + self.block[1:]
        if not isinstance(dest, np.ndarray):
            raise ValueError("dest must be a numpy array, not %s" % type(dest).__name__)
        if dest.dtype != self.dtype:
            raise ValueError("dest has dtype %s, the connector's is %s" % (dest.dtype, self.dtype))
        if (dest.ndim != len(want) or dest.shape[0] != want[0] or dest.shape[1] < want[1]
                or dest.shape[2:] != want[2:]):
            raise ValueError("dest has shape %s, needs (%d, >= %d, %d, %d, %d)"
                             % ((tuple(dest.shape),) + want))
        if not dest.flags.c_contiguous or not dest.flags.writeable:
            raise ValueError("dest must be a writeable C-contiguous array")

    def start_load_kv(self, tokens, dest=None):
        chunks = self._chunks(tokens)
        n = len(chunks)
        if dest is None:
            dest = np.empty((self.layers, n * self.chunk) + self.block[1:], dtype=self.dtype)
        else:
            self.check_dest(dest, n * self.chunk)
        keys = [_kv.block_key(c, l) for l in range(self.layers) for c in chunks]
        groups = chunks * self.layers
        bufs = [dest[l, i * self.chunk:(i + 1) * self.chunk]
                for l in range(self.layers) for i in range(n)]
        future = self._pool.submit(self.ns.multi_get, keys, bufs, groups=groups)
        return Loaded(self.layers, self.chunk, n, dest, future)
