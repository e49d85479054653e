"""stripefs.kv: StripeFS's KV-cache tier from Python (docs/kv.md).

    import stripefs.kv as kv
    c = kv.connect("mds-host:7700")
    ns = c.namespace("llama-fp16", block_size=1 << 20)
    keys = kv.chain_keys(token_ids, chunk_tokens=256, salt=b"tenant", model="llama")
    ns.put(kv.block_key(keys[0], layer), tensor.numpy(), group=keys[0])
    hit = ns.get_into(kv.block_key(keys[0], layer), out_array, group=keys[0])

Blocks move through the buffer protocol without a copy; a miss is False.
"""
from ._core import kv as _kv

Client = _kv.Client
Namespace = _kv.Namespace
connect = _kv.connect
chain_keys = _kv.chain_keys
block_key = _kv.block_key

__all__ = ["Client", "Namespace", "connect", "chain_keys", "block_key"]
