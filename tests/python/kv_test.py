#!/usr/bin/env python3
"""stripefs.kv (the KV-cache tier, docs/kv.md) against a real cluster.

Starts 1 sfs-mds and 2 sfs-oss with --kv-capacity (binding_test's Cluster),
and drives the tier through stripefs.kv only: chained keys checked against
an independent hashlib computation and across processes, put/get_into
byte-exact into bytearrays, memoryview slices and numpy arrays (no copy:
the buffer is the destination), batched exists/multi_get, misses, removes,
and the errors of bad input. Then the connector sketch (kv_connector.py)
saves and loads a request's layers.
"""
import errno
import hashlib
import os
import random
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import binding_test as bt  # noqa: E402  (its Cluster and result bookkeeping)
import stripefs  # noqa: E402
import stripefs.kv as kv  # noqa: E402

BLOCK = 64 << 10
CLUSTER = None
KV = None


def setUpModule():
    global CLUSTER, KV
    CLUSTER = bt.Cluster(os.environ["SFS_MDS_BIN"], os.environ["SFS_OSS_BIN"], 2,
                         oss_args=["--kv-capacity", "64M"])
    with stripefs.connect(CLUSTER.address, rpc_timeout=20) as fs:
        CLUSTER.wait_osts_up(fs, 2)
    KV = kv.connect(CLUSTER.address, transport="tcp")


def tearDownModule():
    if CLUSTER is not None:
        CLUSTER.stop(keep=not bt.RESULT_OK[0])
        if not bt.RESULT_OK[0]:
            print("cluster kept in %s; logs:\n%s" % (CLUSTER.root, CLUSTER.logs()),
                  file=sys.stderr)


def pattern(seed, n=BLOCK):
    return random.Random(seed).randbytes(n)


def reference_chain(tokens, chunk, salt, model, layout):
    """The encoding docs/kv.md spells out, written again with hashlib."""
    keys, parent = [], bytes(32)
    for at in range(0, len(tokens) - chunk + 1, chunk):
        msg = b"sfs-kv-chain-v1\0"
        for field in (salt, model.encode(), layout.encode()):
            msg += struct.pack(">I", len(field)) + field
        part = tokens[at:at + chunk]
        msg += parent + struct.pack(">I", len(part)) + struct.pack(">%dI" % len(part), *part)
        parent = hashlib.sha256(msg).digest()
        keys.append(parent)
    return keys


class ChainKeyTest(unittest.TestCase):
    def test_known_answer(self):
        keys = kv.chain_keys([1, 2, 3, 4, 5, 6, 7, 8, 9], chunk_tokens=4, salt=b"tenant-a",
                             model="tiny", layout="fp32 L8")
        self.assertEqual([k.hex() for k in keys], [
            "d003312f9e1e84116240e4a8b6bbfcb7860131a580d0e172949e494655076c65",
            "2acba7374915cd04403da005f939b4c168b548a1304414e54a6c2d4c40ae6ae3"])

    def test_matches_hashlib_and_another_process(self):
        tokens = [random.Random(5).randrange(1 << 17) for _ in range(1000)]
        keys = kv.chain_keys(tokens, chunk_tokens=256, salt=b"s", model="m", layout="l")
        self.assertEqual(len(keys), 3)
        self.assertEqual(keys, reference_chain(tokens, 256, b"s", "m", "l"))
        code = ("import stripefs.kv as kv, random; t=[random.Random(5).randrange(1<<17) "
                "for _ in range(1000)]; print(b''.join(kv.chain_keys(t, chunk_tokens=256, "
                "salt=b's', model='m', layout='l')).hex())")
        env = dict(os.environ, PYTHONHASHSEED="random")
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
        self.assertEqual(out, b"".join(keys).hex())

    def test_block_key_and_bad_tokens(self):
        chunk = kv.chain_keys([1] * 4, chunk_tokens=4)[0]
        self.assertEqual(kv.block_key(chunk, 3), chunk + b"\0\0\0\3")
        with self.assertRaises(ValueError):
            kv.chain_keys([-1] * 4, chunk_tokens=4)
        with self.assertRaises(ValueError):
            kv.chain_keys([1] * 4, chunk_tokens=0)


class KvTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ns = KV.namespace("py", BLOCK)

    def test_put_then_get_into_is_byte_exact_from_another_client(self):
        data = pattern(1)
        self.ns.put(b"k1", data, group=b"chunk-1")
        other = kv.connect(CLUSTER.address, transport="tcp").namespace("py", BLOCK)
        buf = bytearray(BLOCK)
        self.assertTrue(other.get_into(b"k1", buf, group=b"chunk-1"))
        self.assertEqual(bytes(buf), data)

    def test_get_into_fills_a_memoryview_slice_only(self):
        data = pattern(2)
        self.ns.put(b"k2", memoryview(data))
        big = bytearray(b"\xee" * (BLOCK + 200))
        self.assertTrue(self.ns.get_into(b"k2", memoryview(big)[100:100 + BLOCK]))
        self.assertEqual(bytes(big[100:100 + BLOCK]), data)
        self.assertEqual(big[:100], b"\xee" * 100)
        self.assertEqual(big[100 + BLOCK:], b"\xee" * 100)

    def test_numpy_arrays_in_and_out(self):
        import numpy as np
        src = np.arange(BLOCK // 4, dtype=np.float32)
        self.ns.put(b"np", src)
        dst = np.zeros(BLOCK // 4, dtype=np.float32)
        self.assertTrue(self.ns.get_into(b"np", dst))
        self.assertTrue(np.array_equal(src, dst))

    def test_a_miss_is_false_and_exists_is_batched(self):
        buf = bytearray(BLOCK)
        self.assertFalse(self.ns.get_into(b"never-put", buf))
        keys = [b"e%d" % i for i in range(10)]
        for k in keys[::2]:
            self.ns.put(k, pattern(k))
        self.assertEqual(self.ns.exists(keys), [i % 2 == 0 for i in range(10)])
        self.assertEqual(self.ns.remove(keys[:2]), [True, False])
        self.assertFalse(self.ns.exists([keys[0]])[0])

    def test_multi_put_and_multi_get(self):
        keys = [b"m%d" % i for i in range(32)]
        groups = [b"g%d" % (i // 4) for i in range(32)]
        data = [pattern(i + 100) for i in range(32)]
        self.ns.multi_put(keys, data, groups=groups)
        bufs = [bytearray(BLOCK) for _ in keys]
        self.assertEqual(self.ns.multi_get(keys, bufs, groups=groups), [True] * 32)
        self.assertEqual([bytes(b) for b in bufs], data)
        self.assertEqual(len({KV.place(k, g) for k, g in zip(keys, groups)}), 2)

    def test_bad_input_raises_clear_errors(self):
        with self.assertRaises(OSError) as e:
            self.ns.put(b"k", b"short")
        self.assertEqual(e.exception.errno, errno.EINVAL)
        with self.assertRaises(OSError) as e:
            self.ns.get_into(b"k", bytearray(BLOCK + 1))
        self.assertEqual(e.exception.errno, errno.EINVAL)
        with self.assertRaises(OSError) as e:
            self.ns.put(b"x" * 65, pattern(0))
        self.assertEqual(e.exception.errno, errno.EINVAL)
        with self.assertRaises((BufferError, TypeError)):
            self.ns.get_into(b"k", bytes(BLOCK))  # read-only
        with self.assertRaises(OSError) as e:
            KV.namespace("py", BLOCK * 2)  # the namespace has another block size
        self.assertEqual(e.exception.errno, errno.EINVAL)
        with self.assertRaises(ValueError):
            self.ns.exists([b"a", b"b"], groups=[b"g"])


class ConnectorTest(unittest.TestCase):
    def test_saves_layers_and_reports_the_prefix_it_can_load(self):
        import numpy as np
        from stripefs import kv_connector
        layers, chunk = 4, 16
        shape = (2, chunk, 8, 16)  # K and V, tokens, heads, head dim: 16 KiB of fp32
        conn = kv_connector.StripeFSConnector(
            KV, namespace="conn", layers=layers, chunk_tokens=chunk, block_shape=shape,
            salt=b"tenant-a", model="tiny", layout="fp32")
        tokens = list(range(5 * chunk + 3))
        kvs = [np.random.default_rng(l).standard_normal((2, len(tokens), 8, 16), dtype=np.float32)
               for l in range(layers)]
        for l in range(layers):
            conn.save_kv_layer(tokens, l, kvs[l])
        conn.wait_for_save()
        self.assertEqual(conn.get_num_matched_tokens(tokens), 5 * chunk)
        diverged = tokens[:3 * chunk] + [9999] + tokens[3 * chunk + 1:]
        self.assertEqual(conn.get_num_matched_tokens(diverged), 3 * chunk)
        loaded = conn.start_load_kv(tokens)
        self.assertEqual(loaded.tokens, 5 * chunk)
        for l in range(layers):
            self.assertTrue(np.array_equal(loaded.layer(l), kvs[l][:, :5 * chunk]))
        partial = conn.start_load_kv(diverged)  # no lookup first: the misses say where it stops
        self.assertEqual(partial.tokens, 3 * chunk)
        self.assertTrue(np.array_equal(partial.layer(1), kvs[1][:, :3 * chunk]))
        other = kv_connector.StripeFSConnector(
            KV, namespace="conn", layers=layers, chunk_tokens=chunk, block_shape=shape,
            salt=b"tenant-b", model="tiny", layout="fp32")
        self.assertEqual(other.get_num_matched_tokens(tokens), 0)  # another salt

    def _saved(self, namespace, salt, tokens, seed):
        """A connector with tokens' KV of 3 layers saved; returns it and the KV."""
        import numpy as np
        from stripefs import kv_connector
        conn = kv_connector.StripeFSConnector(
            KV, namespace=namespace, layers=3, chunk_tokens=16, block_shape=(2, 16, 4, 8),
            salt=salt, model="tiny", layout="fp32")
        rng = np.random.default_rng(seed)
        kvs = [rng.standard_normal((2, len(tokens), 4, 8), dtype=np.float32) for _ in range(3)]
        for l in range(3):
            conn.save_kv_layer(tokens, l, kvs[l])
        conn.wait_for_save()
        return conn, kvs

    def test_a_wrong_dest_is_a_value_error_and_nothing_is_fetched(self):
        import numpy as np
        tokens = list(range(64))
        conn, _ = self._saved("conn-dest", b"a", tokens, 7)
        bad = {"too few tokens": np.full((3, 48, 2, 4, 8), 7.0, dtype=np.float32),
               "too few layers": np.full((2, 64, 2, 4, 8), 7.0, dtype=np.float32),
               "other heads": np.full((3, 64, 2, 8, 4), 7.0, dtype=np.float32),
               "fp64": np.full((3, 64, 2, 4, 8), 7.0, dtype=np.float64),
               "not contiguous": np.full((3, 64, 2, 4, 16), 7.0, dtype=np.float32)[..., ::2]}
        for what, dest in bad.items():
            with self.subTest(what), self.assertRaises(ValueError):
                conn.start_load_kv(tokens, dest=dest)
            self.assertTrue((dest == 7.0).all(), what)  # no block landed in it

    def test_a_pooled_dest_reused_for_two_prefixes_holds_each_one(self):
        import numpy as np
        first, second = list(range(64)), list(range(1000, 1048))
        conn, kv1 = self._saved("conn-pool", b"a", first, 1)
        _, kv2 = self._saved("conn-pool", b"a", second, 2)
        pool = np.full((3, 96, 2, 4, 8), np.nan, dtype=np.float32)  # room for more than either
        loaded = conn.start_load_kv(first, dest=pool)
        self.assertEqual(loaded.tokens, 64)
        for l in range(3):
            self.assertTrue(np.array_equal(loaded.layer(l), kv1[l]))
            self.assertTrue(np.shares_memory(loaded.layer(l), pool))
        loaded = conn.start_load_kv(second, dest=pool)
        self.assertEqual(loaded.tokens, 48)
        for l in range(3):
            self.assertTrue(np.array_equal(loaded.layer(l), kv2[l]))
            self.assertTrue(np.shares_memory(loaded.layer(l), pool))


if __name__ == "__main__":
    runner = unittest.TextTestRunner(verbosity=2, resultclass=bt.Result)
    sys.exit(not unittest.main(testRunner=runner, exit=False).result.wasSuccessful())
