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
"""
import os

from . import _core

try:  # lazily optional: the binding must not need torch
    from torch.utils.data import Dataset as _Base
except ImportError:  # pragma: no cover - depends on the machine
    _Base = object


class FileDataset(_Base):
    def __init__(self, address, paths, transform=None, **connect_options):
        self.address = address
        self.paths = list(paths)
        self.transform = transform
        self.connect_options = connect_options
        self._client = None
        self._pid = None

    def __len__(self):
        return len(self.paths)

    def _fs(self):
        # A connection made before a fork is not usable in the child.
        if self._client is None or self._pid != os.getpid():
            self._client = _core.connect(self.address, **self.connect_options)
            self._pid = os.getpid()
        return self._client

    def __getitem__(self, index):
        path = self.paths[index]
        fs = self._fs()
        with fs.open(path, "rb") as f:
            size = f.size  # known from the open: no extra round trip
            buf = bytearray(size)
            view = memoryview(buf)
            got = 0
            while got < size:
                n = f.readinto(view[got:])
                if n == 0:
                    break
                got += n
        if self.transform is not None:
            return self.transform(view[:got])
        view.release()
        del buf[got:]
        return buf

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_client"] = None
        state["_pid"] = None
        return state
