"""StripeFS from Python, without a mount: libsfs through a pybind11 module.

    import stripefs
    with stripefs.connect("mds-host:7000") as fs:
        with fs.open("/data/shard-0", "rb") as f:
            buf = bytearray(1 << 20)
            n = f.readinto(buf)          # the OSS replies land in buf: no copy

Errors are OSError with the errno (FileNotFoundError, PermissionError, ...).
Blocking calls release the GIL, so threads read in parallel. See docs/python.md.
"""
from ._core import Client, File, StatResult, connect

__all__ = ["Client", "File", "StatResult", "connect"]
