// stripefs._core: the pybind11 module. Only the Python-facing shape lives
// here (names, keyword arguments, defaults, docstrings, the error
// translator); the behaviour is in client_binding.cc and file_binding.cc.
#include <cstring>

#include <pybind11/stl.h>

#include "client/python/binding.h"

namespace sfs::python {
namespace {

// OSError(errno, "strerror (libsfs's detail)", filename): Python picks the
// subclass (FileNotFoundError for ENOENT...) from the errno itself.
void RaiseOsError(const SfsError& e) {
  int code = e.status.code();
  std::string text = std::strerror(code);
  if (!e.status.message().empty()) text += " (" + e.status.message() + ")";
  py::object os_error = py::reinterpret_borrow<py::object>(PyExc_OSError);
  py::object err;
  if (e.path.empty()) {
    err = os_error(code, text);
  } else {
    err = os_error(code, text, py::reinterpret_steal<py::object>(PyUnicode_DecodeFSDefaultAndSize(
                                   e.path.data(), static_cast<Py_ssize_t>(e.path.size()))));
  }
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
}

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

void BindStat(py::module_& m) {
  py::class_<StatResult>(m, "StatResult",
                         "What Client.stat() returns: the fields of os.stat_result StripeFS has.")
      .def_readonly("st_ino", &StatResult::st_ino)
      .def_readonly("st_mode", &StatResult::st_mode)
      .def_readonly("st_nlink", &StatResult::st_nlink)
      .def_readonly("st_uid", &StatResult::st_uid)
      .def_readonly("st_gid", &StatResult::st_gid)
      .def_readonly("st_size", &StatResult::st_size)
      .def_readonly("st_blocks", &StatResult::st_blocks)
      .def_readonly("st_blksize", &StatResult::st_blksize)
      .def_readonly("st_rdev", &StatResult::st_rdev)
      .def_readonly("st_atime_ns", &StatResult::st_atime_ns)
      .def_readonly("st_mtime_ns", &StatResult::st_mtime_ns)
      .def_readonly("st_ctime_ns", &StatResult::st_ctime_ns)
      .def_property_readonly("st_atime", [](const StatResult& s) { return Seconds(s.st_atime_ns); })
      .def_property_readonly("st_mtime", [](const StatResult& s) { return Seconds(s.st_mtime_ns); })
      .def_property_readonly("st_ctime", [](const StatResult& s) { return Seconds(s.st_ctime_ns); })
      .def("__repr__", [](const StatResult& s) {
        char buf[192];
        std::snprintf(buf, sizeof(buf),
                      "stripefs.StatResult(st_mode=0o%o, st_ino=%llu, st_nlink=%u, st_uid=%u, "
                      "st_gid=%u, st_size=%llu)",
                      s.st_mode, static_cast<unsigned long long>(s.st_ino), s.st_nlink, s.st_uid,
                      s.st_gid, static_cast<unsigned long long>(s.st_size));
        return std::string(buf);
      });
}

void BindFile(py::module_& m) {
  py::class_<File, std::shared_ptr<File>>(m, "File", "An open StripeFS file (binary).")
      .def("read", &File::Read, py::arg("size") = -1,
           "Up to size bytes from the position (all to the end of file if size < 0).")
      .def("readinto", &File::Readinto, py::arg("buffer"),
           "Reads into a writable contiguous buffer, without a copy; returns the byte count.")
      .def("pread", &File::Pread, py::arg("size"), py::arg("offset"),
           "Up to size bytes at offset; the position does not move.")
      .def("preadinto", &File::Preadinto, py::arg("buffer"), py::arg("offset"),
           "readinto at offset; the position does not move.")
      .def("write", &File::Write, py::arg("data"), "Writes a bytes-like object whole.")
      .def("pwrite", &File::Pwrite, py::arg("data"), py::arg("offset"))
      .def("seek", &File::Seek, py::arg("offset"), py::arg("whence") = SEEK_SET)
      .def("tell", &File::Tell)
      .def("truncate", &File::Truncate, py::arg("size") = py::none())
      .def("flush", &File::Flush, "Reports the written size to the MDS.")
      .def("fsync", &File::Fsync, "Makes the written data and the size durable.")
      .def("close", &File::Close)
      .def("readable", &File::readable)
      .def("writable", &File::writable)
      .def("seekable", [](const File&) { return true; })
      .def_property_readonly("closed", &File::closed)
      .def_property_readonly("name", &File::path)
      .def_property_readonly("mode", &File::mode)
      .def_property_readonly("ino", &File::ino)
      .def_property_readonly("size", &File::size,
                             "The size at open, raised by this client's writes (no round trip).")
      .def("__enter__", [](std::shared_ptr<File> f) { return f; })
      .def("__exit__", [](File& f, py::args) { f.Close(); })
      .def("__repr__", [](File& f) {
        return "<stripefs.File name='" + f.path() + "' mode='" + f.mode() + "'" +
               (f.closed() ? " closed" : "") + ">";
      });
}

void BindClient(py::module_& m) {
  py::class_<Client, std::shared_ptr<Client>>(m, "Client",
                                              "A connection to a StripeFS file system.")
      .def("open", &Client::Open, py::arg("path"), py::arg("mode") = "rb",
           py::arg("perm") = 0666,
           "Opens a file: mode as open()'s ('rb', 'wb', 'r+b', 'ab', 'xb'; 'b' optional) or "
           "os.O_* flags.")
      .def("stat", &Client::Stat, py::arg("path"))
      .def("exists", &Client::Exists, py::arg("path"))
      .def("listdir", &Client::Listdir, py::arg("path") = "/")
      .def("mkdir", &Client::Mkdir, py::arg("path"), py::arg("mode") = 0777)
      .def("unlink", &Client::Unlink, py::arg("path"))
      .def("remove", &Client::Unlink, py::arg("path"))
      .def("rmdir", &Client::Rmdir, py::arg("path"))
      .def("rename", &Client::Rename, py::arg("src"), py::arg("dst"))
      .def("truncate", &Client::Truncate, py::arg("path"), py::arg("size"))
      .def("setstripe", &Client::Setstripe, py::arg("path"), py::kw_only(),
           py::arg("count") = 0, py::arg("size") = 0, py::arg("pool") = "",
           py::arg("start_ost") = -1, py::arg("mirror_count") = 0, py::arg("ec_data") = 0,
           py::arg("ec_parity") = 0,
           "As `sfs setstripe`: a directory's default layout, an empty file's layout, or a new "
           "empty file with it. count -1 = all OSTs, 0 = inherit; ec_data/ec_parity K, M "
           "erasure-code it (as --ec K+M).")
      .def("getstripe", &Client::Getstripe, py::arg("path"))
      .def("osts", &Client::Osts, "The OSTs the MDS knows, with their state.")
      .def("kv_capability", &Client::KvCapability,
           "A KV-tier capability for this client's tenant, signed by the MDS, for "
           "stripefs.kv.connect(capability=); b'' without a cluster key. Good for minutes.")
      .def("prefetch", &Client::Prefetch, py::arg("entries"), py::kw_only(),
           py::arg("lookahead") = 0, py::arg("append") = false,
           "The order hint: the paths (or (path, offset, length)) that will be read next, in "
           "order; the cache fetches ahead of the reader and evicts by farthest next use. "
           "lookahead: entries ahead (0 = prefetch_depth). Missing entries are skipped.")
      .def("wait_prefetch", &Client::WaitPrefetch, py::arg("timeout") = 60.0,
           "Waits until every hinted entry the look-ahead admits now is fetched or skipped "
           "(or waits for the reader to make room); False on timeout.")
      .def("cache_status", &Client::CacheStatus, "The client cache's counters (a dict).")
      .def("drop_cache", &Client::DropCache, "Forgets every cached block and the hint.")
      .def("close", &Client::Close)
      .def("__enter__", [](std::shared_ptr<Client> c) { return c; })
      .def("__exit__", [](Client& c, py::args) { c.Close(); });
}

// A size argument: an int (bytes) or a string such as "4G".
uint64_t SizeArg(const py::object& v, const char* what) {
  if (py::isinstance<py::str>(v)) {
    Result<uint64_t> r = client::ParseSize(v.cast<std::string>());
    if (!r.ok()) throw py::value_error(std::string(what) + ": not a size");
    return *r;
  }
  long long n = v.cast<long long>();
  if (n < 0) throw py::value_error(std::string(what) + " must be >= 0");
  return static_cast<uint64_t>(n);
}

void InitModule(py::module_& m) {
  m.doc() = "StripeFS's native client (libsfs) for Python; see docs/python.md.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SfsError& e) {
      RaiseOsError(e);
    }
  });
  BindStat(m);
  BindFile(m);
  BindClient(m);
  BindKv(m);
  m.def(
      "connect",
      [](const std::string& address, double rpc_timeout, double connect_timeout,
         double recovery_timeout, int io_threads, const std::string& transport,
         uint64_t write_behind, std::optional<uint32_t> uid, std::optional<uint32_t> gid,
         const py::object& cache_dir, const py::object& cache_size, const py::object& cache_ram,
         int prefetch_threads, uint32_t prefetch_depth, const std::string& tenant,
         const py::object& keyfile, double close_delay, const py::object& cache_read_ahead) {
        ConnectArgs a{address, rpc_timeout, connect_timeout, recovery_timeout, io_threads,
                      transport, write_behind, close_delay, uid, gid};
        if (!cache_dir.is_none()) a.cache_dir = PathArg(cache_dir);
        a.cache_size = SizeArg(cache_size, "cache_size");
        a.cache_ram = SizeArg(cache_ram, "cache_ram");
        a.cache_read_ahead = SizeArg(cache_read_ahead, "cache_read_ahead");
        a.prefetch_threads = prefetch_threads;
        a.prefetch_depth = prefetch_depth;
        a.tenant = tenant;
        if (!keyfile.is_none()) a.keyfile = PathArg(keyfile);
        return Client::Connect(a);
      },
      py::arg("address"), py::kw_only(), py::arg("rpc_timeout") = 30.0,
      py::arg("connect_timeout") = 5.0, py::arg("recovery_timeout") = 60.0,
      py::arg("io_threads") = 2, py::arg("transport") = "auto", py::arg("write_behind") = 0,
      py::arg("uid") = py::none(), py::arg("gid") = py::none(),
      py::arg("cache_dir") = py::none(), py::arg("cache_size") = 0, py::arg("cache_ram") = 0,
      py::arg("prefetch_threads") = 16, py::arg("prefetch_depth") = 256,
      py::arg("tenant") = "", py::arg("keyfile") = py::none(), py::arg("close_delay") = 0.01,
      py::arg("cache_read_ahead") = client::Options{}.cache_read_ahead,
      "Connects to the MDS at 'host:port'. Timeouts in seconds; write_behind in bytes (0 = "
      "writes are acknowledged by the OSSes before write() returns). cache_ram / cache_dir "
      "(+ cache_size, bytes or '4G') turn on the client cache (docs/cache.md); "
      "cache_read_ahead (bytes or '64M', 0 = off) bounds its sequential read-ahead. tenant + "
      "keyfile: connect as that tenant, seeing only its fileset (docs/security.md). "
      "close_delay (seconds, 0.01 as sfs-mount): the close of a file that wrote nothing is "
      "sent with a later request instead of as its own round trip (0 = at once).");
}

}  // namespace
}  // namespace sfs::python

PYBIND11_MODULE(_core, m) { sfs::python::InitModule(m); }
