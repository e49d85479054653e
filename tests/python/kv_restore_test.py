#!/usr/bin/env python3
"""bench/kv_restore.py's short form (issue 19): a tiny transformer's prompt
KV stored through stripefs.kv_connector, restored in a new process, and its
next-token logits checked against a full recompute. Needs python3-torch
(missing is a failure, not a skip). No timing is asserted.
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import binding_test as bt  # noqa: E402
import stripefs  # noqa: E402
import torch  # noqa: E402,F401  (required)
import kv_restore  # noqa: E402

CLUSTER = None


def setUpModule():
    global CLUSTER
    CLUSTER = bt.Cluster(os.environ["SFS_MDS_BIN"], os.environ["SFS_OSS_BIN"], 2,
                         oss_args=["--kv-capacity", "32M"])
    with stripefs.connect(CLUSTER.address, rpc_timeout=20) as fs:
        CLUSTER.wait_osts_up(fs, 2)


def tearDownModule():
    if CLUSTER is not None:
        CLUSTER.stop(keep=not bt.RESULT_OK[0])
        if not bt.RESULT_OK[0]:
            print("cluster kept in %s; logs:\n%s" % (CLUSTER.root, CLUSTER.logs()),
                  file=sys.stderr)


class RestoreTest(unittest.TestCase):
    CFG = kv_restore.Config(layers=2, d=64, heads=4, vocab=500, max_tokens=257, chunk=32,
                            q_chunk=48)  # q_chunk not a divisor: the chunk edges are exercised

    def test_restored_kv_gives_the_recomputed_logits(self):
        r = kv_restore.run(CLUSTER.address, self.CFG, 128, "kv-restore-test")
        self.assertEqual(r["matched_tokens"], 128)
        self.assertEqual(r["kv_bytes"], 2 * 2 * 128 * 64 * 4)  # layers x K,V x tokens x d x fp32
        self.assertLessEqual(r["max_logit_diff"], 1e-5, r)
        self.assertTrue(r["logits_match"], r)
        self.assertGreater(r["transport_gbps"], 0)
        self.assertGreaterEqual(r["transport_best_gbps"], r["transport_gbps"])
        self.assertEqual(len(r["restore_runs"]), 3)  # three new processes, the median counts
        self.assertEqual(r["restore_seconds"], sorted(r["restore_runs"])[1])
        # The prompt diverging at 75 % (token 96 of 128, a chunk edge): 3 chunks from the
        # tier, the rest prefilled on them, the logits of the full recompute.
        self.assertEqual(r["partial_diverge_at"], 96)
        self.assertEqual(r["partial_matched_tokens"], 96)
        self.assertTrue(r["partial_logits_match"], r)
        self.assertAlmostEqual(r["transport_fraction"],
                               r["restore_gbps"] / r["transport_gbps"], places=6)
        # The raw blocks sit on the OSTs as the context's do: each OST's share is
        # its chunks times the layers.
        kvc = kv_restore.tier(CLUSTER.address)
        chunks = kv_restore.connector(kvc, self.CFG, "kv-restore-test")._chunks(
            kv_restore.prompt(self.CFG, 128)[:-1].tolist())
        shares = {}
        for g in chunks:
            shares[kvc.place(g, group=g)] = shares.get(kvc.place(g, group=g), 0) + self.CFG.layers
        self.assertEqual(r["transport_blocks_per_ost"], sorted(shares.values(), reverse=True))

    def test_a_pooled_restore_gives_the_recomputed_logits(self):
        r = kv_restore.run(CLUSTER.address, self.CFG, 96, "kv-restore-pooled", pooled=True,
                           restores=1, partial_at=0.6)
        self.assertTrue(r["pooled"])
        self.assertEqual(r["partial_diverge_at"], 57)  # inside chunk 1: only chunk 0 is shared
        self.assertEqual(r["partial_matched_tokens"], 32)
        self.assertTrue(r["partial_logits_match"], r)
        self.assertEqual(r["matched_tokens"], 96)
        self.assertTrue(r["logits_match"], r)

    def test_zipf_requests_hit_every_context_after_its_first_when_all_fit(self):
        # 32M per OSS holds all 4 tiny contexts: every request but each context's
        # first is a hit. The LRU and optimal figures of a 2-context cache are
        # bounded by that and ordered.
        r = kv_restore.zipf(CLUSTER.address, self.CFG, 64, 4, 30, 1.0, 2, "kv-zipf-test", "tcp",
                            None)
        self.assertEqual(r["zipf_hit_rate"], (30 - r["zipf_distinct"]) / 30)
        self.assertEqual(r["zipf_token_hit_rate"], r["zipf_hit_rate"])
        self.assertLessEqual(r["zipf_lru_hit_rate"], r["zipf_optimal_hit_rate"])
        self.assertLessEqual(r["zipf_optimal_hit_rate"], r["zipf_hit_rate"])

    def test_the_cache_simulations_count_as_expected(self):
        seq = [0, 1, 2, 0, 1, 3, 0, 1, 2, 3]
        self.assertEqual(kv_restore.simulate(seq, 4, "lru"), 0.6)  # all fit: 6 repeats
        self.assertEqual(kv_restore.simulate(seq, 2, "lru"), 0.0)  # each evicted before reuse
        self.assertEqual(kv_restore.simulate(seq, 2, "opt"), 0.3)  # keeps 0 and 1 for their reuse
        # One group per context on one OST: the group-level LRU is the context-level one.
        one = {c: [c] for c in range(4)}
        for cap in (2, 3, 4):
            self.assertEqual(kv_restore.simulate_groups(seq, one, {c: 0 for c in range(4)}, cap,
                                                        "lru"), kv_restore.simulate(seq, cap, "lru"))
        # SLRU with all of a 4-group OST protected but 1 keeps 0 and 1 (hit) from 2 and 3
        # (seen once, then cycling through probation): 0,1 hit at t3,t4,t6,t7.
        self.assertEqual(kv_restore.simulate_groups(seq, one, {c: 0 for c in range(4)}, 3, "slru",
                                                    protected_share=0.67), 0.4)

    def test_the_cached_decode_step_equals_the_recompute_locally(self):
        # The model's own KV path, without the tier: prefill then one step.
        model = kv_restore.Model(self.CFG).eval()
        tokens = kv_restore.prompt(self.CFG, 100, seed=3)
        _, past = model(tokens[:-1])
        step, _ = model(tokens[-1:], past)
        full, _ = model(tokens)
        self.assertLessEqual((step - full).abs().max().item(), 1e-5)

    def test_a_prompt_that_was_never_stored_is_refused_not_guessed(self):
        from stripefs import kv
        model = kv_restore.Model(self.CFG).eval()
        kvc = kv.connect(CLUSTER.address, transport="tcp")
        with self.assertRaisesRegex(RuntimeError, "has 0 of 64 prompt tokens"):
            kv_restore.restore(model, self.CFG, kvc, kv_restore.prompt(self.CFG, 64, seed=9),
                               "kv-restore-test")


class TenantTest(unittest.TestCase):
    """A cluster with a key and two tenants: B asks for A's prompt with the
    same tokens, salt, model and layout (the same keys) and misses, its raw
    get of A's block misses without a byte of A's, and a capability with a
    byte changed is refused."""
    CFG = RestoreTest.CFG

    @classmethod
    def setUpClass(cls):
        cli = os.environ["SFS_CLI_BIN"]
        cls.tmp = tempfile.mkdtemp(prefix="sfs-kv-tenants-",
                                   dir=os.environ.get("SFS_TEST_TMPDIR") or None)
        key = os.path.join(cls.tmp, "cluster.key")
        subprocess.run([cli, "key", "generate", key], check=True, stdout=subprocess.DEVNULL)
        cls.cluster = bt.Cluster(os.environ["SFS_MDS_BIN"], os.environ["SFS_OSS_BIN"], 2,
                                 oss_args=["--kv-capacity", "32M", "--cluster-key", key],
                                 mds_args=["--cluster-key", key])
        with stripefs.connect(cls.cluster.address, rpc_timeout=20) as fs:
            cls.cluster.wait_osts_up(fs, 2)
            cls.tenants = []
            for t in ("ka", "kb"):
                fs.mkdir("/" + t)
                tkey = os.path.join(cls.tmp, t + ".key")
                subprocess.run([cli, "tenant", "create", t, "--fileset", "/" + t, "--key-out",
                                tkey, "--mds", cls.cluster.address], check=True,
                               stdout=subprocess.DEVNULL)
                cls.tenants.append(t + ":" + tkey)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop(keep=not bt.RESULT_OK[0])

    def test_a_second_tenant_misses_and_a_forged_capability_is_refused(self):
        r = kv_restore.run(self.cluster.address, self.CFG, 64, "kv-tenants", restores=1,
                           tenants=self.tenants, partial_at=0)
        self.assertEqual(r["matched_tokens"], 64)  # A restores its own
        self.assertTrue(r["logits_match"], r)
        self.assertEqual(r["tenant_b_matched_tokens"], 0)
        self.assertEqual(r["tenant_b_loaded_tokens"], 0)
        self.assertFalse(r["tenant_b_raw_get_hit"])
        self.assertTrue(r["tenant_b_buffer_untouched"])
        self.assertNotIn("not refused", r["forged_capability_error"])
        self.assertRegex(r["forged_capability_error"], "(?i)capabilit|EACCES|denied")


if __name__ == "__main__":
    runner = unittest.TextTestRunner(verbosity=2, resultclass=bt.Result)
    sys.exit(not unittest.main(testRunner=runner, exit=False).result.wasSuccessful())
