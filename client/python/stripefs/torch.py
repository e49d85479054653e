"""A map-style PyTorch Dataset over StripeFS files, read with readinto.

    from stripefs.torch import FileDataset
    ds = FileDataset("mds-host:7000", paths, transform=decode)
    loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=4)

Item i is transform(memoryview over file i's bytes), or a bytearray of them
without a transform: one buffer per item, filled by readinto. Each process
(every DataLoader worker) opens its own connection on first use, so the
dataset pickles as just its address and paths. torch is
imported only to subclass its Dataset when it is installed; without torch the
class still works as a plain sequence.

The order hint (docs/cache.md): with the client cache on (cache_ram= /
cache_dir= in the connect options) an EpochSampler hands each epoch's order
to the cache before the loader reads it:

    ds = FileDataset(addr, paths, cache_ram="8G")
    sampler = EpochSampler(ds, seed=7, batch_size=32, num_workers=4)  # as the loader's
    loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=4)
    for epoch in range(3):
        sampler.set_epoch(epoch)   # before iter(loader): the workers inherit it
        for batch in loader: ...

Each worker process prefetches its own share: the DataLoader hands batches to
its workers in turn, so worker w reads batches w, w + K, w + 2K, ...
(persistent_workers=False, the default, forks the workers after set_epoch).
With cache_dir= each worker gets its own directory below it, DIR/worker-N.

MountDataset reads the same files through an sfs-mount instead: all workers
of the node share the mount's one cache, and the EpochSampler hints the
whole order to it once per epoch.
"""
import errno
import os
import random

from . import _core

try:  # lazily optional: the binding must not need torch
    from torch.utils.data import Dataset as _Base
except ImportError:  # pragma: no cover - depends on the machine
    _Base = object


try:
    from torch.utils.data import Sampler as _SamplerBase
    from torch.utils.data import get_worker_info as _worker_info
except ImportError:  # pragma: no cover - depends on the machine
    _SamplerBase = object

    def _worker_info():
        return None


def _read_item(size, readinto, transform):
    """An item of size bytes read into one buffer with readinto(view) -> n:
    transform(memoryview) over what was read, or the bytearray of it."""
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = readinto(view[got:])
        if n == 0:
            break
        got += n
    if transform is not None:
        return transform(view[:got])
    view.release()
    del buf[got:]
    return buf


class FileDataset(_Base):
    def __init__(self, address, paths, transform=None, **connect_options):
        self.address = address
        self.paths = list(paths)
        self.transform = transform
        self.connect_options = connect_options
        self._client = None
        self._pid = None
        self._order = None       # (epoch order, batch size) from an EpochSampler
        self._hinted_pid = None  # the process that passed the current order on

    def set_order(self, order, batch_size=1, num_workers=0):
        """The indices this epoch will read, in order; passed to the cache
        now (num_workers 0) or by each worker process on its first item."""
        self._order = (list(order), max(1, int(batch_size)))
        self._hinted_pid = None
        if num_workers == 0 and _worker_info() is None:
            self._hint(None)

    def _hint(self, info):
        if self._order is None or self._hinted_pid == os.getpid():
            return
        self._hinted_pid = os.getpid()
        order, batch = self._order
        if info is not None and info.num_workers > 1:
            k, w = info.num_workers, info.id
            order = [i for n, i in enumerate(order) if (n // batch) % k == w]
        self._fs().prefetch([self.paths[i] for i in order])

    def __len__(self):
        return len(self.paths)

    def _fs(self):
        # A connection made before a fork is not usable in the child.
        if self._client is None or self._pid != os.getpid():
            self._client = _core.connect(self.address, **self._worker_options())
            self._pid = os.getpid()
        return self._client

    def _worker_options(self):
        # Two processes must not share one cache_dir (docs/cache.md): each
        # DataLoader worker keeps its own below it, DIR/worker-N, which the
        # worker of the same id reuses next epoch (checked by version, so a
        # file rewritten in between is fetched again, never served stale).
        options = dict(self.connect_options)
        info = _worker_info()
        if options.get("cache_dir") and info is not None:
            options["cache_dir"] = os.path.join(os.fspath(options["cache_dir"]),
                                                "worker-%d" % info.id)
            os.makedirs(options["cache_dir"], exist_ok=True)
        return options

    def __getitem__(self, index):
        if self._order is not None and self._hinted_pid != os.getpid():
            self._hint(_worker_info())
        path = self.paths[index]
        fs = self._fs()
        with fs.open(path, "rb") as f:
            # The size is known from the open: no extra round trip.
            return _read_item(f.size, f.readinto, self.transform)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_client"] = None
        state["_pid"] = None
        state["_hinted_pid"] = None
        return state


# The order hint through a mount (client/fuse/cache_ctl.h, as `sfs prefetch`
# sends it): one path per line, in xattr values under XATTR_SIZE_MAX, the
# first replacing the mount's hint and the rest appended to it.
_HINT_CHUNK = 60000


def _send_mount_hint(mountpoint, paths):
    """Hands paths (inside the file system) to the mount's cache as its order
    hint. True if sent; False if mountpoint is not an sfs-mount with a cache
    (probed first, so that no other file system is given a stray xattr)."""
    try:
        os.getxattr(mountpoint, "user.sfs.cache.status")
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENODATA):
            return False  # sfs-mount without -o cache_ram/cache_dir, or not StripeFS
        raise
    chunks, chunk = [], []
    size = 0
    for p in paths:
        if "\n" in p or "\t" in p:
            raise ValueError("a hinted path cannot hold a newline or tab: %r" % p)
        line = os.fsencode(p) + b"\n"
        if chunk and size + len(line) > _HINT_CHUNK:
            chunks.append(b"".join(chunk))
            chunk, size = [], 0
        chunk.append(line)
        size += len(line)
    chunks.append(b"".join(chunk))
    for n, value in enumerate(chunks):
        name = "user.sfs.prefetch" + (".append" if n else "")
        os.setxattr(mountpoint, name, value)
    return True


class MountDataset(_Base):
    """A map-style Dataset over files of a StripeFS mount (sfs-mount), read
    with the kernel's open and readinto.

        ds = MountDataset("/mnt/sfs", paths)          # paths as FileDataset's
        sampler = EpochSampler(ds, seed=7)
        loader = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=8)

    paths name files inside the file system ("/train/s000001"), as for
    FileDataset, so the two swap by one argument. Every DataLoader worker reads
    through the node's one sfs-mount, so all of them, in every epoch, share its
    client cache (-o cache_ram=,cache_dir=; docs/cache.md): one copy of a
    sample per node, where FileDataset keeps a cache per worker process. An
    EpochSampler's set_epoch hands the whole epoch's order to that cache at
    once, from the process that calls it (the mount's look-ahead follows the
    closes of all workers). On a mount without a cache (or another file
    system) no hint is sent and reads go to the servers; hint_sent tells which.
    """

    def __init__(self, mountpoint, paths, transform=None):
        self.mountpoint = os.fspath(mountpoint).rstrip("/") or "/"
        self.paths = [os.fspath(p) for p in paths]
        for p in self.paths:
            if not p.startswith("/"):
                raise ValueError("MountDataset paths are inside the file system, "
                                 "from its root: %r" % p)
        base = "" if self.mountpoint == "/" else self.mountpoint
        self._local = [base + p for p in self.paths]
        self.transform = transform
        self.hint_sent = None  # after set_order: True, or False on a mount without a cache

    def set_order(self, order, batch_size=1, num_workers=0):
        """The indices this epoch will read, in order: hinted to the mount now."""
        del batch_size, num_workers  # one cache for all workers: the whole order
        self.hint_sent = _send_mount_hint(self.mountpoint, [self.paths[i] for i in order])

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        fd = os.open(self._local[index], os.O_RDONLY | os.O_CLOEXEC)
        try:
            return _read_item(os.fstat(fd).st_size, lambda v: os.readv(fd, [v]), self.transform)
        finally:
            os.close(fd)


class EpochSampler(_SamplerBase):
    """A new seeded permutation every epoch (as DistributedSampler's
    set_epoch), passed to the dataset's cache as the order hint."""

    def __init__(self, dataset, seed=0, batch_size=1, num_workers=0, shuffle=True):
        self.dataset = dataset
        self.seed = seed
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.shuffle = shuffle
        self.epoch = 0
        self._order = None

    def order(self, epoch):
        idx = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed * 1000003 + epoch).shuffle(idx)
        return idx

    def set_epoch(self, epoch):
        self.epoch = epoch
        self._order = self.order(epoch)
        self.dataset.set_order(self._order, self.batch_size, self.num_workers)

    def __iter__(self):
        if self._order is None:
            self.set_epoch(self.epoch)
        order, self._order = self._order, None
        return iter(order)

    def __len__(self):
        return len(self.dataset)
