// The Python binding of libsfs (module stripefs._core, wrapped by the
// stripefs package): the objects pybind11 exposes and the helpers they share.
//
// Threading: every call that may wait on the network runs with the GIL
// released (Blocking()), so Python threads (DataLoader workers in threads,
// concurrent.futures pools) read in parallel; libsfs is thread-safe. The
// only lock held across a libsfs call is a File's position lock
// (File::pos_mu_), always taken *after* the GIL is released, so a thread
// waiting for it never holds the GIL.
//
// Errors: a failed libsfs call throws SfsError (still inside the released
// region); pybind11's translator (module.cc) raises it as OSError(errno,
// strerror, filename), which Python turns into FileNotFoundError etc.
//
// Buffers: read-into and write calls take any object with the buffer
// protocol and give libsfs a span over its memory: no intermediate copy.
#pragma once

#include <Python.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>

#include "client/lib/client.h"

namespace sfs::python {

namespace py = pybind11;

// A libsfs error on its way to Python as OSError.
struct SfsError {
  Status status;
  std::string path;  // the filename of the OSError ("" = none)
};

// Raises SfsError iff !st.ok().
void Check(const Status& st, const std::string& path = {});
template <typename T>
T Check(Result<T> r, const std::string& path = {}) {
  if (!r.ok()) throw SfsError{r.status(), path};
  return std::move(r).value();
}

// Runs fn() with the GIL released; fn must not touch Python objects.
template <typename F>
auto Blocking(F&& fn) {
  py::gil_scoped_release nogil;
  return fn();
}

// libsfs's threads stay in the process that connected. A fork child that
// inherited a Client or File must not use it (its calls would wait on threads
// that are not there): RequireOwner raises RuntimeError there. Nor may it
// destroy it (joining those threads would hang): the destructors Abandon it.
void RequireOwner(pid_t owner);
template <typename T>
void Abandon(std::shared_ptr<T>& p) {
  if (p) new std::shared_ptr<T>(std::move(p));  // never freed, on purpose
}

// os.fspath(obj) as bytes (str encoded as the file system encoding does):
// accepts str, bytes and os.PathLike.
std::string PathArg(const py::handle& obj);

// A buffer-protocol view of a contiguous Python object, released on
// destruction. Throws py::error_already_set (BufferError/TypeError) when the
// object has no such buffer or, with writable, a read-only one.
class BufferView {
 public:
  BufferView(const py::handle& obj, bool writable);
  ~BufferView() { PyBuffer_Release(&view_); }
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  uint8_t* data() const { return static_cast<uint8_t*>(view_.buf); }
  size_t size() const { return static_cast<size_t>(view_.len); }

 private:
  Py_buffer view_{};
};

// What os.stat() returns, for the fields StripeFS has.
struct StatResult {
  uint64_t st_ino = 0, st_size = 0, st_blocks = 0, st_rdev = 0;
  uint32_t st_mode = 0, st_uid = 0, st_gid = 0, st_nlink = 0;
  uint32_t st_blksize = 0;
  int64_t st_atime_ns = 0, st_mtime_ns = 0, st_ctime_ns = 0;
  static StatResult From(const client::Attr& a);
};

// Options of stripefs.connect(); the binding's subset of client::Options.
struct ConnectArgs {
  std::string address;
  double rpc_timeout = 30, connect_timeout = 5, recovery_timeout = 60;  // seconds
  int io_threads = 2;
  std::string transport = "auto";
  uint64_t write_behind = 0;  // bytes; 0 = off
  // The release of a handle that wrote nothing rides on a later MDS request
  // (client::Options::close_delay), as sfs-mount's -o close_delay_ms=10.
  double close_delay = 0.01;  // seconds; 0 = every close is its own round trip
  std::optional<uint32_t> uid, gid;
  // The client cache (docs/cache.md): off unless cache_ram or cache_dir.
  std::string cache_dir;
  uint64_t cache_size = 0, cache_ram = 0;
  uint64_t cache_read_ahead = client::Options{}.cache_read_ahead;  // libsfs's default
  int prefetch_threads = 16;
  uint32_t prefetch_depth = 256;
  // A tenant's connection (docs/security.md); "" = the default tenant.
  std::string tenant, keyfile;
};

class File;

// stripefs.Client: a connection to one file system. Paths are inside the
// file system ("/a/b"; the leading '/' may be left out). Calls are made as
// the process's uid/gid/groups (or connect()'s uid/gid). close() drops the
// connection once every File opened through it is gone too.
class Client : public std::enable_shared_from_this<Client> {
 public:
  static std::shared_ptr<Client> Connect(const ConnectArgs& args);
  ~Client();

  std::shared_ptr<File> Open(const py::object& path, const py::object& mode, uint32_t perm);
  StatResult Stat(const py::object& path);
  bool Exists(const py::object& path);
  py::list Listdir(const py::object& path);
  void Mkdir(const py::object& path, uint32_t mode);
  void Unlink(const py::object& path);
  void Rmdir(const py::object& path);
  void Rename(const py::object& src, const py::object& dst);
  void Truncate(const py::object& path, uint64_t size);
  void Setstripe(const py::object& path, int32_t count, uint64_t size, const std::string& pool,
                 int32_t start_ost, uint32_t mirror_count,
                 uint32_t ec_data, uint32_t ec_parity);
  py::dict Getstripe(const py::object& path);
  py::list Osts();
  // Client::KvCapability: this client's tenant's grant for stripefs.kv.connect.
  py::bytes KvCapability();
  // The order hint (Client::Prefetch): paths, or (path, offset, length) tuples.
  void Prefetch(const py::iterable& entries, uint64_t lookahead, bool append);
  bool WaitPrefetch(double timeout);
  py::dict CacheStatus();
  void DropCache();
  void Close();

  // The connection, or ValueError once closed.
  std::shared_ptr<client::Client> Conn();
  const client::Cred& cred() const { return cred_; }
  uint64_t write_behind() const { return write_behind_; }

 private:
  Client(std::shared_ptr<client::Client> c, client::Cred cred, uint32_t umask,
         uint64_t write_behind)
      : conn_(std::move(c)), cred_(std::move(cred)), umask_(umask), write_behind_(write_behind) {}
  // The inode of the directory holding path and the last name of path.
  std::pair<uint64_t, std::string> Parent(const std::string& path);
  client::Attr Resolve(const std::string& path);

  const pid_t pid_ = getpid();  // the process that connected
  std::mutex mu_;
  std::shared_ptr<client::Client> conn_;  // GUARDED_BY(mu_); null once closed
  const client::Cred cred_;
  const uint32_t umask_;  // the process's at connect(): new files' and directories' modes
  const uint64_t write_behind_;
};

// stripefs.File: an open regular file, binary only. Position-based calls
// (read, write, seek) serialise on the file; pread/pwrite do not. Keeps its
// Client's connection alive until closed.
class File {
 public:
  File(std::shared_ptr<client::Client> conn, client::Cred cred, std::shared_ptr<client::File> f,
       std::string path, int flags, bool write_behind)
      : conn_(std::move(conn)), cred_(std::move(cred)), ino_(f->ino()), f_(std::move(f)),
        path_(std::move(path)), flags_(flags), write_behind_(write_behind) {}
  ~File();

  py::bytes Read(int64_t n);
  size_t Readinto(const py::buffer& buf);
  py::bytes Pread(int64_t n, uint64_t off);
  size_t Preadinto(const py::buffer& buf, uint64_t off);
  size_t Write(const py::buffer& buf);
  size_t Pwrite(const py::buffer& buf, uint64_t off);
  uint64_t Seek(int64_t off, int whence);
  uint64_t Tell();
  uint64_t Truncate(std::optional<uint64_t> size);
  void Flush();
  void Fsync();
  void Close();
  bool closed();
  const std::string& path() const { return path_; }
  std::string mode() const;
  bool readable() const { return (flags_ & O_ACCMODE) != O_WRONLY; }
  bool writable() const { return (flags_ & O_ACCMODE) != O_RDONLY; }
  uint64_t ino() const { return ino_; }
  uint64_t size();

 private:
  // The handle, or ValueError "I/O operation on closed file". With the GIL.
  std::shared_ptr<client::File> Handle();
  void RequireReadable() const;
  void RequireWritable() const;
  // Writes buf at off (an append at the end of file, with O_APPEND);
  // returns where it landed. Without the GIL.
  Result<uint64_t> WriteAt(const std::shared_ptr<client::File>& f, uint64_t off,
                           std::span<const uint8_t> buf);
  // n bytes from off (at == nullopt: from the position, which advances; n < 0:
  // to the end of file) in a new bytes object.
  py::bytes ReadBytes(int64_t n, std::optional<uint64_t> at);
  // len(buf) bytes into buf, from off or the position, as ReadBytes.
  size_t ReadInto(const py::buffer& buf, std::optional<uint64_t> at);

  const pid_t pid_ = getpid();  // the process that opened it
  std::shared_ptr<client::Client> conn_;  // Abandoned in a fork child
  const client::Cred cred_;  // the opener's: seek to end and truncate ask as it
  const uint64_t ino_;
  std::mutex mu_;                    // guards the handle; held only briefly, with the GIL
  std::shared_ptr<client::File> f_;  // GUARDED_BY(mu_); null once closed
  // Serialises the calls that use or move the position; taken without the
  // GIL, held across their libsfs call.
  std::mutex pos_mu_;
  uint64_t pos_ = 0;  // GUARDED_BY(pos_mu_)
  const std::string path_;
  const int flags_;
  const bool write_behind_;
};

// Adds the submodule stripefs._core.kv (kv_binding.cc).
void BindKv(py::module_& m);

}  // namespace sfs::python
