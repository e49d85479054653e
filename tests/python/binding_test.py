#!/usr/bin/env python3
"""The Python binding (import stripefs) against a real cluster.

Starts 1 sfs-mds and 4 sfs-oss on 127.0.0.1 (ports they pick: each prints
`LISTENING host:port`, read through a pipe with a deadline), waits until the
MDS reports every OST up, and drives the cluster through stripefs only. Run by
`meson test --suite python`, which sets PYTHONPATH to the built package and
SFS_MDS_BIN / SFS_OSS_BIN to the daemons. Logs stay in the cluster's temp
directory, printed when a test fails.
"""
import concurrent.futures
import errno
import os
import random
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import stripefs

NUM_OSS = 4
STRIPE = 64 << 10
START_TIMEOUT = 30.0


class Daemon:
    """One daemon process; its stdout after the handshake is drained into a log."""

    def __init__(self, name, argv, log_dir):
        self.name = name
        self.metrics = None  # from a `METRICS host:port` line (--metrics-listen)
        self.log = os.path.join(log_dir, name + ".log")
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err,
                                         stdin=subprocess.DEVNULL)
        self.address = self._wait_listening(argv)
        threading.Thread(target=self._drain, daemon=True).start()

    def _wait_listening(self, argv):
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT
        line = b""
        while time.monotonic() < deadline:
            if not sel.select(deadline - time.monotonic()):
                break
            chunk = os.read(self.proc.stdout.fileno(), 1)
            if not chunk:
                break
            line += chunk
            if chunk == b"\n":
                if line.startswith(b"LISTENING "):
                    return line[len(b"LISTENING "):].decode().strip()
                if line.startswith(b"METRICS "):
                    self.metrics = line[len(b"METRICS "):].decode().strip()
                line = b""  # another line before the handshake
        self.stop()
        raise RuntimeError("%s did not print LISTENING within %.0fs\n  command: %s\n%s" %
                           (self.name, START_TIMEOUT, " ".join(argv), tail(self.log)))

    def _drain(self):
        for _ in self.proc.stdout:
            pass

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def tail(path, lines=20):
    try:
        with open(path, errors="replace") as f:
            return "".join("    | " + l for l in f.readlines()[-lines:])
    except OSError as e:
        return "    (no log: %s)" % e


class Cluster:
    def __init__(self, mds_bin, oss_bin, num_oss, oss_args=(), mds_args=()):
        base = os.environ.get("SFS_TEST_TMPDIR") or tempfile.gettempdir()
        self.root = tempfile.mkdtemp(prefix="sfs-python-", dir=base)
        logs = os.path.join(self.root, "logs")
        os.makedirs(logs)
        self.daemons = []
        mds_dir = os.path.join(self.root, "mds")
        os.makedirs(mds_dir)
        mds = Daemon("mds", [mds_bin, "--data", mds_dir, "--listen", "127.0.0.1:0",
                             "--metrics-listen", "127.0.0.1:0"] + list(mds_args), logs)
        self.daemons.append(mds)
        self.address = mds.address
        self.mds_metrics = mds.metrics
        for i in range(num_oss):
            ost = os.path.join(self.root, "ost%d" % i)
            os.makedirs(ost)
            self.daemons.append(Daemon("oss%d" % i, [
                oss_bin, "--mds", mds.address, "--ost", ost, "--listen", "127.0.0.1:0",
                "--heartbeat-ms", "200"] + list(oss_args), logs))

    def wait_osts_up(self, client, n):
        # Polls the MDS's own view (as the C++ harness does), with a deadline.
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if sum(1 for o in client.osts() if o["up"]) >= n:
                return
            time.sleep(0.05)
        raise RuntimeError("OSTs not up in time: %r" % client.osts())

    def logs(self):
        return "\n".join("  %s (%s):\n%s" % (d.name, d.log, tail(d.log)) for d in self.daemons)

    def stop(self, keep):
        for d in reversed(self.daemons):
            d.stop()
        if not keep:
            shutil.rmtree(self.root, ignore_errors=True)


CLUSTER = None
FS = None


def setUpModule():
    global CLUSTER, FS
    CLUSTER = Cluster(os.environ["SFS_MDS_BIN"], os.environ["SFS_OSS_BIN"], NUM_OSS)
    FS = stripefs.connect(CLUSTER.address, rpc_timeout=20)
    CLUSTER.wait_osts_up(FS, NUM_OSS)


def tearDownModule():
    if FS is not None:
        FS.close()
    if CLUSTER is not None:
        CLUSTER.stop(keep=not RESULT_OK[0])
        if not RESULT_OK[0]:
            print("cluster kept in %s; logs:\n%s" % (CLUSTER.root, CLUSTER.logs()),
                  file=sys.stderr)


RESULT_OK = [True]


def pattern(n, seed):
    return random.Random(seed).randbytes(n)


class ErasureCodedFileTest(unittest.TestCase):
    """An EC 2+1 file (setstripe ec_data/ec_parity): libsfs encodes it, whole
    rows and read-modify-written partial ones, and reads it back."""

    def test_unaligned_writes_read_back_and_the_layout_says_ec(self):
        FS.mkdir("/ec")
        FS.setstripe("/ec", size=STRIPE, ec_data=2, ec_parity=1)
        path = "/ec/data"
        data = bytearray(pattern(5 * 2 * STRIPE + 777, 2))
        with FS.open(path, "wb") as f:
            f.write(bytes(data))
        with FS.open(path, "r+b") as f:  # read-modify-write inside rows
            for off, n in ((100, 5000), (STRIPE - 10, 70000), (len(data) - 3, 3)):
                patch = pattern(n, off)
                f.seek(off)
                f.write(patch)
                data[off:off + n] = patch
        layout = FS.getstripe(path)
        self.assertEqual((layout["ec_data"], layout["ec_parity"]), (2, 1))
        self.assertEqual(len({o["ost"] for o in layout["objects"]}), 3)
        with FS.open(path) as f:
            self.assertEqual(f.read(), bytes(data))
        with self.assertRaises(ValueError):
            FS.setstripe("/ec/half", ec_data=2)


class StripedFileTest(unittest.TestCase):
    """One file striped 4 wide, written once, read back many ways."""

    SIZE = STRIPE * NUM_OSS * 3 + 12345  # three full rows and a partial one

    @classmethod
    def setUpClass(cls):
        FS.mkdir("/striped")
        FS.setstripe("/striped", count=NUM_OSS, size=STRIPE)
        cls.path = "/striped/data"
        cls.data = pattern(cls.SIZE, 1)
        with FS.open(cls.path, "wb") as f:
            pos = 0
            for step in (1, 70000, STRIPE, 3 * STRIPE + 7):  # writes across stripe edges
                f.write(cls.data[pos:pos + step])
                pos += step
            f.write(memoryview(cls.data)[pos:])
            assert f.tell() == cls.SIZE

    def test_layout_spreads_the_file_over_every_ost(self):
        layout = FS.getstripe(self.path)
        self.assertEqual(layout["stripe_size"], STRIPE)
        self.assertEqual(len(layout["objects"]), NUM_OSS)
        self.assertEqual(len({o["ost"] for o in layout["objects"]}), NUM_OSS)

    def test_read_returns_every_byte_written(self):
        with FS.open(self.path) as f:
            self.assertEqual(f.read(), self.data)
            self.assertEqual(f.read(), b"")  # at end of file

    def test_stat_reports_the_size_and_a_regular_file(self):
        st = FS.stat(self.path)
        self.assertEqual(st.st_size, self.SIZE)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        with FS.open(self.path) as f:
            self.assertEqual(st.st_ino, f.ino)
            self.assertEqual(f.size, self.SIZE)

    def test_readinto_a_bytearray_fills_it(self):
        buf = bytearray(self.SIZE)
        with FS.open(self.path, "rb") as f:
            self.assertEqual(f.readinto(buf), self.SIZE)
            self.assertEqual(f.tell(), self.SIZE)
        self.assertEqual(buf, self.data)

    def test_readinto_a_memoryview_slice_touches_only_the_slice(self):
        buf = bytearray(b"\xee" * (STRIPE * 3))
        view = memoryview(buf)[100:100 + 2 * STRIPE]
        off = STRIPE - 50  # spans three stripes
        with FS.open(self.path) as f:
            f.seek(off)
            self.assertEqual(f.readinto(view), 2 * STRIPE)
            self.assertEqual(f.tell(), off + 2 * STRIPE)
        self.assertEqual(buf[100:100 + 2 * STRIPE], self.data[off:off + 2 * STRIPE])
        self.assertEqual(buf[:100], b"\xee" * 100)
        self.assertEqual(buf[100 + 2 * STRIPE:], b"\xee" * (STRIPE - 100))

    def test_pread_at_offsets_leaves_the_position(self):
        with FS.open(self.path) as f:
            f.seek(10)
            for off, n in [(0, 1), (STRIPE - 1, 2), (STRIPE * 3 + 5, STRIPE * 2),
                           (self.SIZE - 3, 3), (self.SIZE - 3, 100), (self.SIZE, 10),
                           (self.SIZE + STRIPE, 10)]:
                self.assertEqual(f.pread(n, off), self.data[off:off + n], (off, n))
            buf = bytearray(STRIPE + 1)
            self.assertEqual(f.preadinto(buf, 2 * STRIPE - 1), STRIPE + 1)
            self.assertEqual(bytes(buf), self.data[2 * STRIPE - 1:3 * STRIPE])
            self.assertEqual(f.tell(), 10)

    def test_seek_from_the_end_and_current(self):
        with FS.open(self.path) as f:
            self.assertEqual(f.seek(-5, os.SEEK_END), self.SIZE - 5)
            self.assertEqual(f.read(), self.data[-5:])
            f.seek(100)
            self.assertEqual(f.seek(20, os.SEEK_CUR), 120)
            self.assertEqual(f.read(4), self.data[120:124])

    def test_threads_reading_in_parallel_get_their_own_bytes(self):
        chunk = 48 << 10  # not stripe-aligned
        offsets = list(range(0, self.SIZE, chunk)) * 3
        random.Random(7).shuffle(offsets)
        with FS.open(self.path) as f:
            def read(off):
                buf = bytearray(chunk)
                n = f.preadinto(buf, off)
                return off, bytes(buf[:n])
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                for off, got in pool.map(read, offsets):
                    self.assertEqual(got, self.data[off:off + chunk], off)

    def test_threads_on_their_own_handles(self):
        def whole(_):
            with FS.open(self.path) as f:
                buf = bytearray(self.SIZE)
                return f.readinto(buf), bytes(buf)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for n, got in pool.map(whole, range(8)):
                self.assertEqual(n, self.SIZE)
                self.assertEqual(got, self.data)

    def test_readinto_typed_buffers_fills_their_bytes(self):
        import array
        words = array.array("I", bytes(STRIPE))  # a format other than bytes, as numpy's
        with FS.open(self.path) as f:
            self.assertEqual(f.preadinto(words, STRIPE + 1), STRIPE)
        self.assertEqual(words.tobytes(), self.data[STRIPE + 1:2 * STRIPE + 1])
        buf = bytearray(STRIPE)
        with FS.open(self.path) as f:
            self.assertEqual(f.preadinto(memoryview(buf).cast("Q"), 7), STRIPE)
        self.assertEqual(bytes(buf), self.data[7:7 + STRIPE])

    def test_readinto_a_numpy_array(self):
        # Debian's python3-numpy, for the Debian python3 meson builds against
        # (scripts/install-deps.sh): missing is a broken set-up, not a skip.
        import numpy
        arr = numpy.zeros(self.SIZE, dtype=numpy.uint8)
        with FS.open(self.path) as f:
            self.assertEqual(f.readinto(arr), self.SIZE)
        self.assertEqual(arr.tobytes(), self.data)
        words = numpy.zeros(STRIPE // 4, dtype=numpy.uint32)  # any dtype: bytes are bytes
        with FS.open(self.path) as f:
            self.assertEqual(f.preadinto(words, STRIPE), STRIPE)
        self.assertEqual(words.tobytes(), self.data[STRIPE:2 * STRIPE])


class GilTest(unittest.TestCase):
    def test_a_read_waiting_on_a_stopped_oss_lets_other_threads_run(self):
        # The read cannot finish while its OSS is stopped. If it held the GIL,
        # this thread could not resume the OSS: the read would time out (EIO)
        # and return before the SIGCONT below.
        path = "/gil-one-stripe"
        data = pattern(3 * STRIPE, 3)
        FS.setstripe(path, count=1, size=STRIPE)
        with FS.open(path, "wb") as f:
            f.write(data)
        ost = FS.getstripe(path)["objects"][0]["ost"]
        address = next(o["address"] for o in FS.osts() if o["index"] == ost)
        oss = next(d for d in CLUSTER.daemons if d.address == address)
        fs = stripefs.connect(CLUSTER.address, rpc_timeout=5)
        f = fs.open(path)
        entered = threading.Event()
        result = {}

        def reader():
            buf = bytearray(len(data))
            entered.set()
            try:
                result["n"] = f.readinto(buf)
                result["data"] = bytes(buf)
            except OSError as e:
                result["error"] = e
            result["done"] = time.monotonic()

        oss.proc.send_signal(signal.SIGSTOP)
        try:
            t = threading.Thread(target=reader)
            t.start()
            entered.wait()
            # A window in which the read is (almost surely) in flight; never
            # long enough for rpc_timeout.
            end = time.monotonic() + 0.5
            spins = 0
            while time.monotonic() < end:
                spins += 1
        finally:
            resumed = time.monotonic()
            oss.proc.send_signal(signal.SIGCONT)
        t.join()
        f.close()
        fs.close()
        self.assertNotIn("error", result)
        self.assertGreater(result["done"], resumed)
        self.assertEqual(result["n"], len(data))
        self.assertEqual(result["data"], data)


class ForkTest(unittest.TestCase):
    def test_a_fork_child_gets_an_error_and_exits_without_hanging(self):
        global FS
        data = pattern(2 * STRIPE, 5)
        with FS.open("/forked", "wb") as w:
            w.write(data)
        f = FS.open("/forked")
        pid = os.fork()
        if pid == 0:  # the child: libsfs's threads are not here
            code = 0
            for call in (lambda: FS.stat("/"), lambda: f.pread(1, 0)):
                try:
                    call()
                    code = 1
                except RuntimeError:
                    pass
            try:
                child_fs = stripefs.connect(CLUSTER.address)  # a new connection works
                if child_fs.open("/forked").pread(10, STRIPE) != data[STRIPE:STRIPE + 10]:
                    code = 2
                child_fs.close()
            except Exception:
                code = 3
            del f
            FS = None  # both inherited objects destroyed here: must not hang
            os._exit(code)
        deadline = time.monotonic() + 30
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                self.fail("the fork child hung")
            time.sleep(0.05)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertEqual(f.pread(4, 0), data[:4])  # the parent's still works
        f.close()


class NamespaceTest(unittest.TestCase):
    def setUp(self):
        self.dir = "/ns-" + self.id().rsplit(".", 1)[-1]
        FS.mkdir(self.dir)

    def test_listdir_lists_what_was_created(self):
        names = ["a", "b.bin", "c d", "ü"] + ["n%04d" % i for i in range(1500)]  # > one page
        for n in names[:4]:
            FS.open(self.dir + "/" + n, "wb").close()
        FS.mkdir(self.dir + "/sub")
        for n in names[4:]:
            FS.open(self.dir + "/sub/" + n, "xb").close()
        self.assertEqual(sorted(FS.listdir(self.dir)), sorted(names[:4] + ["sub"]))
        self.assertEqual(sorted(FS.listdir(self.dir + "/sub")), sorted(names[4:]))
        self.assertIn(self.dir[1:], FS.listdir("/"))

    def test_missing_paths_raise_file_not_found(self):
        missing = self.dir + "/nope"
        for call in (lambda: FS.stat(missing), lambda: FS.open(missing),
                     lambda: FS.listdir(missing), lambda: FS.unlink(missing),
                     lambda: FS.open(missing + "/x", "wb")):
            with self.assertRaises(FileNotFoundError) as cm:
                call()
            self.assertEqual(cm.exception.errno, errno.ENOENT)
        with self.assertRaises(FileNotFoundError) as cm:
            FS.stat(missing)
        self.assertEqual(cm.exception.filename, missing)
        self.assertFalse(FS.exists(missing))
        self.assertTrue(FS.exists(self.dir))

    def test_a_name_over_255_bytes_is_enametoolong(self):
        long_name = self.dir + "/" + "x" * 256
        for call in (lambda: FS.open(long_name, "wb"), lambda: FS.stat(long_name),
                     lambda: FS.mkdir(long_name)):
            with self.assertRaises(OSError) as cm:
                call()
            self.assertEqual(cm.exception.errno, errno.ENAMETOOLONG)
        FS.open(self.dir + "/" + "y" * 255, "wb").close()  # 255 is still fine
        self.assertTrue(FS.exists(self.dir + "/" + "y" * 255))

    def test_errors_carry_their_errno(self):
        FS.open(self.dir + "/f", "wb").close()
        with self.assertRaises(FileExistsError):
            FS.mkdir(self.dir)
        with self.assertRaises(FileExistsError):
            FS.open(self.dir + "/f", "xb")
        with self.assertRaises(IsADirectoryError):
            FS.open(self.dir)
        with self.assertRaises(NotADirectoryError):
            FS.listdir(self.dir + "/f")
        with self.assertRaises(OSError) as cm:
            FS.rmdir(self.dir)
        self.assertEqual(cm.exception.errno, errno.ENOTEMPTY)
        with FS.open(self.dir + "/f", "rb") as f:
            with self.assertRaises(OSError) as cm:
                f.write(b"x")
            self.assertEqual(cm.exception.errno, errno.EBADF)
        with self.assertRaises(ValueError):
            FS.open(self.dir + "/f", "rt")

    def test_rename_unlink_rmdir(self):
        with FS.open(self.dir + "/old", "wb") as f:
            f.write(b"hello")
        FS.rename(self.dir + "/old", self.dir + "/new")
        self.assertEqual(FS.listdir(self.dir), ["new"])
        with FS.open(self.dir + "/new") as f:
            self.assertEqual(f.read(), b"hello")
        FS.unlink(self.dir + "/new")
        self.assertEqual(FS.listdir(self.dir), [])
        FS.rmdir(self.dir)
        self.assertFalse(FS.exists(self.dir))
        FS.mkdir(self.dir)  # for tearDown symmetry with the other tests

    def test_path_like_and_bytes_paths(self):
        import pathlib
        p = pathlib.PurePosixPath(self.dir) / "pl"
        with FS.open(p, "wb") as f:
            f.write(bytearray(b"abc"))
        self.assertEqual(FS.stat(os.fsencode(str(p))).st_size, 3)


def mds_requests(ops):
    """The MDS's sfs_mds_requests_total summed over ops, from its GET /metrics."""
    import urllib.request
    with urllib.request.urlopen("http://%s/metrics" % CLUSTER.mds_metrics, timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        for op in ops:
            if line.startswith('sfs_mds_requests_total{op="%s"} ' % op):
                total += float(line.split()[-1])
    return total


class OpenByPathTest(unittest.TestCase):
    """open() walks the path at the MDS in the open's own request (issue 18):
    one MDS request whatever the depth, and what a lookup per name would see."""

    OPENISH = ("lookup", "getattr", "open", "open_path", "create", "readdir")

    def setUp(self):
        self.dir = "/op-" + self.id().rsplit(".", 1)[-1]
        FS.mkdir(self.dir)

    def test_an_open_of_a_b_c_costs_one_mds_request(self):
        FS.mkdir(self.dir + "/a")
        FS.mkdir(self.dir + "/a/b")
        with FS.open(self.dir + "/a/b/c", "wb") as f:
            f.write(b"abc")
        before = mds_requests(self.OPENISH)
        f = FS.open(self.dir + "/a/b/c")
        self.assertEqual(mds_requests(self.OPENISH) - before, 1)
        self.assertEqual(f.read(), b"abc")
        f.close()

    def test_a_rename_or_unlink_by_another_client_is_seen_at_the_next_open(self):
        with FS.open(self.dir + "/x", "wb") as f:
            f.write(b"old")
        with FS.open(self.dir + "/y", "wb") as f:
            f.write(b"new")
        with FS.open(self.dir + "/x") as f:
            self.assertEqual(f.read(), b"old")
        with stripefs.connect(CLUSTER.address, rpc_timeout=20) as other:
            other.rename(self.dir + "/y", self.dir + "/x")
            with FS.open(self.dir + "/x") as f:
                self.assertEqual(f.read(), b"new")
            other.unlink(self.dir + "/x")
            with self.assertRaises(FileNotFoundError):
                FS.open(self.dir + "/x")

    def test_errors_are_those_of_a_lookup_per_name(self):
        FS.mkdir(self.dir + "/d")
        FS.open(self.dir + "/d/f", "wb").close()
        root = stripefs.connect(CLUSTER.address, uid=0, gid=0)
        self.addCleanup(root.close)
        root.mkdir(self.dir + "/locked", 0o700)  # root's, whoever runs the test
        root.open(self.dir + "/locked/g", "wb").close()
        cases = [(self.dir + "/d/f/x", NotADirectoryError, errno.ENOTDIR),
                 (self.dir + "/d/missing/f", FileNotFoundError, errno.ENOENT),
                 (self.dir + "/d/" + "n" * 256, OSError, errno.ENAMETOOLONG),
                 (self.dir + "/d", IsADirectoryError, errno.EISDIR)]
        for path, exc, code in cases:
            with self.assertRaises(exc) as cm:
                FS.open(path)
            self.assertEqual(cm.exception.errno, code, path[:80])
        with stripefs.connect(CLUSTER.address, uid=1000, gid=1000) as user:
            with self.assertRaises(PermissionError):
                user.open(self.dir + "/locked/g")
            with user.open(self.dir + "/d/../d/./f") as f:
                self.assertEqual(f.read(), b"")
        with root.open(self.dir + "/locked/g") as f:  # root may search it
            self.assertEqual(f.read(), b"")


class FileModesTest(unittest.TestCase):
    def setUp(self):
        self.path = "/modes-" + self.id().rsplit(".", 1)[-1]

    def test_append_writes_at_the_end(self):
        with FS.open(self.path, "wb") as f:
            f.write(b"one")
        with FS.open(self.path, "ab") as f:
            self.assertEqual(f.write(b""), 0)
            f.write(b"two")
            self.assertEqual(f.tell(), 6)
            self.assertEqual(f.write(b""), 0)
            self.assertEqual(f.tell(), 6)
        with FS.open(self.path) as f:
            self.assertEqual(f.read(), b"onetwo")

    def test_read_write_mode_pwrite_and_truncate(self):
        with FS.open(self.path, "w+b") as f:
            f.write(b"0123456789")
            f.pwrite(b"AB", 3)
            self.assertEqual(f.pread(10, 0), b"012AB56789")
            self.assertEqual(f.truncate(4), 4)
            f.fsync()
        self.assertEqual(FS.stat(self.path).st_size, 4)
        with FS.open(self.path, "r+b") as f:
            self.assertEqual(f.read(), b"012A")

    def test_a_closed_file_refuses_io_and_close_is_idempotent(self):
        f = FS.open(self.path, "wb")
        self.assertFalse(f.closed)
        f.close()
        f.close()
        self.assertTrue(f.closed)
        with self.assertRaises(ValueError):
            f.write(b"x")
        with self.assertRaises(ValueError):
            f.read()

    def test_write_behind_then_close_reads_back(self):
        data = pattern(5 * STRIPE + 3, 11)
        with stripefs.connect(CLUSTER.address, write_behind=1 << 20) as fs:
            with fs.open(self.path, "wb") as f:
                for off in range(0, len(data), 10000):
                    f.write(data[off:off + 10000])
        with FS.open(self.path) as f:
            self.assertEqual(f.read(), data)

    def test_deferred_and_immediate_closes_read_the_same_and_bad_delays_are_refused(self):
        data = pattern(3 * STRIPE + 5, 13)
        with FS.open(self.path, "wb") as f:
            f.write(data)
        for delay in (0.01, 0):
            with stripefs.connect(CLUSTER.address, close_delay=delay) as fs:
                for _ in range(20):  # reads whose releases ride on the next open
                    with fs.open(self.path) as f:
                        self.assertEqual(f.read(), data)
                # A deferred release does not keep the name: it goes at once.
                fs.unlink(self.path)
                with self.assertRaises(FileNotFoundError):
                    fs.stat(self.path)
            with FS.open(self.path, "wb") as f:
                f.write(data)
        for bad in (-1, 11):
            with self.assertRaises(ValueError):
                stripefs.connect(CLUSTER.address, close_delay=bad)

    def test_a_closed_client_refuses_calls_but_its_open_files_work(self):
        fs = stripefs.connect(CLUSTER.address)
        f = fs.open(self.path, "w+b")
        fs.close()
        with self.assertRaises(ValueError):
            fs.stat("/")
        f.write(b"still open")
        self.assertEqual(f.pread(5, 6), b"open")
        f.close()
        self.assertEqual(FS.stat(self.path).st_size, 10)

    def test_read_only_buffers_are_refused_for_readinto(self):
        with FS.open(self.path, "w+b") as f:
            f.write(b"data")
            with self.assertRaises(BufferError):
                f.preadinto(b"xxxx", 0)
            with self.assertRaises(BufferError):
                f.preadinto(memoryview(bytearray(8))[::2], 0)  # strided
            with self.assertRaises(TypeError):
                f.write("text is not bytes")


class FileDatasetTest(unittest.TestCase):
    def test_items_are_the_files_bytes_and_the_dataset_pickles(self):
        import pickle
        from stripefs.torch import FileDataset
        FS.mkdir("/ds")
        blobs = [pattern(n, n) for n in (0, 1, 4096, 110 << 10, 3 * STRIPE + 1)]
        paths = []
        for i, blob in enumerate(blobs):
            paths.append("/ds/s%d" % i)
            with FS.open(paths[-1], "wb") as f:
                f.write(blob)
        ds = FileDataset(CLUSTER.address, paths, rpc_timeout=10)
        self.assertEqual(len(ds), len(blobs))
        self.assertEqual([bytes(ds[i]) for i in range(len(ds))], blobs)
        copy = pickle.loads(pickle.dumps(ds))  # what a DataLoader worker gets
        self.assertEqual(copy[3], blobs[3])
        self.assertEqual(ds.__class__(CLUSTER.address, paths, transform=len)[4], len(blobs[4]))


class CacheTest(unittest.TestCase):
    """The client cache through the binding: prefetch(), cache_status(), drop_cache()."""

    def test_prefetch_warms_the_cache_and_the_reads_that_follow_are_hits(self):
        FS.mkdir("/cached")
        blobs = [pattern(50000 + 1000 * i, 300 + i) for i in range(12)]
        paths = ["/cached/f%d" % i for i in range(len(blobs))]
        for p, blob in zip(paths, blobs):
            with FS.open(p, "wb") as f:
                f.write(blob)
        with stripefs.connect(CLUSTER.address, rpc_timeout=20, cache_ram="16M") as c:
            self.assertEqual(c.cache_status()["capacity"], 16 << 20)
            order = list(reversed(paths)) + ["/cached/missing", ("/cached/f0", 0, None)]
            c.prefetch(order)
            self.assertTrue(c.wait_prefetch(30))
            st = c.cache_status()
            # f0 is hinted twice: the second is fetched again only when the
            # first is still in flight on another worker, else it is found held.
            self.assertIn(st["prefetch_files"], (len(paths), len(paths) + 1))
            self.assertEqual(st["prefetch_skipped"], 1)
            self.assertEqual(st["blocks"], len(paths))
            self.assertEqual(st["misses"], 0)
            for p, blob in zip(reversed(paths), reversed(blobs)):
                with c.open(p) as f:
                    self.assertEqual(f.read(), blob)
            st = c.cache_status()
            self.assertEqual(st["misses"], 0)
            self.assertEqual(st["hits"], len(paths))
            self.assertEqual(st["hit_rate"], 1.0)
            c.drop_cache()
            self.assertEqual(c.cache_status()["blocks"], 0)
            with c.open(paths[0]) as f:
                self.assertEqual(f.read(), blobs[0])
            self.assertEqual(c.cache_status()["misses"], 1)

    def test_a_client_without_cache_options_has_none(self):
        with self.assertRaises(OSError) as e:
            FS.cache_status()
        self.assertEqual(e.exception.errno, errno.ENOTSUP)
        with self.assertRaises(ValueError):
            stripefs.connect(CLUSTER.address, cache_ram="lots")


class EpochSamplerTest(unittest.TestCase):
    """stripefs.torch's hook: each epoch's order goes to the cache as the hint."""

    def test_the_epoch_order_is_prefetched_and_read_as_hits(self):
        from stripefs.torch import EpochSampler, FileDataset
        FS.mkdir("/epochs")
        blobs = [pattern(20000 + 37 * i, 500 + i) for i in range(16)]
        paths = ["/epochs/e%d" % i for i in range(len(blobs))]
        for p, blob in zip(paths, blobs):
            with FS.open(p, "wb") as f:
                f.write(blob)
        ds = FileDataset(CLUSTER.address, paths, rpc_timeout=10, cache_ram="8M")
        sampler = EpochSampler(ds, seed=3, batch_size=4)
        orders = []
        for epoch in range(2):
            sampler.set_epoch(epoch)
            order = list(iter(sampler))
            self.assertEqual(sorted(order), list(range(len(paths))))
            orders.append(order)
            fs = ds._fs()
            self.assertTrue(fs.wait_prefetch(30))
            before = fs.cache_status()
            self.assertEqual(before["hint_length"], len(paths))
            self.assertEqual([bytes(ds[i]) for i in order], [blobs[i] for i in order])
            after = fs.cache_status()
            self.assertEqual(after["misses"], before["misses"], "epoch %d" % epoch)
            self.assertEqual(after["hits"] - before["hits"], len(paths))
        self.assertNotEqual(orders[0], orders[1], "a new permutation every epoch")

    def test_each_worker_hints_its_own_batches(self):
        import types
        import stripefs.torch as st

        class Recorder:
            def __init__(self):
                self.hinted = None

            def prefetch(self, entries):
                self.hinted = list(entries)

        ds = st.FileDataset("unused:1", ["/p%d" % i for i in range(10)])
        ds._client, ds._pid = Recorder(), os.getpid()
        order = [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
        ds.set_order(order, batch_size=2, num_workers=2)
        self.assertIsNone(ds._client.hinted, "with workers the main process hints nothing")
        ds._hint(types.SimpleNamespace(num_workers=2, id=1))  # batches 1 and 3 of 5
        self.assertEqual(ds._client.hinted, ["/p7", "/p6", "/p3", "/p2"])


class Result(unittest.TextTestResult):
    def addFailure(self, test, err):
        RESULT_OK[0] = False
        super().addFailure(test, err)

    def addError(self, test, err):
        RESULT_OK[0] = False
        super().addError(test, err)


if __name__ == "__main__":
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Result)
    sys.exit(not unittest.main(testRunner=runner, exit=False).result.wasSuccessful())
