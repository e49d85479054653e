#!/usr/bin/env python3
"""bench/kv_restore.py's short form (issue 19): a tiny transformer's prompt
KV stored through stripefs.kv_connector, restored in a new process, and its
next-token logits checked against a full recompute. Needs python3-torch
(missing is a failure, not a skip). No timing is asserted.
"""
import os
import sys
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
        self.assertAlmostEqual(r["transport_fraction"],
                               r["restore_gbps"] / r["transport_gbps"], places=6)

    def test_a_pooled_restore_gives_the_recomputed_logits(self):
        r = kv_restore.run(CLUSTER.address, self.CFG, 96, "kv-restore-pooled", pooled=True)
        self.assertTrue(r["pooled"])
        self.assertEqual(r["matched_tokens"], 96)
        self.assertTrue(r["logits_match"], r)

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


if __name__ == "__main__":
    runner = unittest.TextTestRunner(verbosity=2, resultclass=bt.Result)
    sys.exit(not unittest.main(testRunner=runner, exit=False).result.wasSuccessful())
