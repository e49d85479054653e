// stripefs.File: reads and writes of one open file over libsfs.
//
// Zero copy: readinto/preadinto hand libsfs the caller's buffer, which the
// OSS replies land in directly; read/pread allocate the bytes object first
// and read into it the same way; write/pwrite send from the caller's buffer.
// A buffer stays exported (so a bytearray cannot be resized) for the call.
//
// Lock order: the GIL is released before pos_mu_ is waited for (LockPosition);
// pos_mu_ may then be held while the GIL is taken back, never the reverse.
#include <sys/stat.h>

#include "client/python/binding.h"

namespace sfs::python {
namespace {

// Extra room a read-to-end asks for past the size this client knows, so that
// a file grown by another client still ends in a short read (end of file).
constexpr size_t kReadAllSlack = 64 << 10;

// A position lock for reads and writes at the position (at == nullopt); none
// for pread/pwrite. Waits without the GIL.
std::unique_lock<std::mutex> LockPosition(std::mutex& mu, const std::optional<uint64_t>& at) {
  if (at) return {};
  py::gil_scoped_release nogil;
  return std::unique_lock<std::mutex>(mu);
}

// A bytes object being filled; resizable while we hold its only reference.
class BytesBuffer {
 public:
  explicit BytesBuffer(size_t n)
      : obj_(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n))) {
    if (obj_ == nullptr) throw py::error_already_set();
  }
  ~BytesBuffer() { Py_XDECREF(obj_); }
  BytesBuffer(const BytesBuffer&) = delete;
  BytesBuffer& operator=(const BytesBuffer&) = delete;
  uint8_t* data() { return reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(obj_)); }
  void Resize(size_t n) {
    if (_PyBytes_Resize(&obj_, static_cast<Py_ssize_t>(n)) != 0) throw py::error_already_set();
  }
  py::bytes Release() { return py::reinterpret_steal<py::bytes>(std::exchange(obj_, nullptr)); }

 private:
  PyObject* obj_;
};

}  // namespace

File::~File() {
  std::shared_ptr<client::File> f = std::move(f_);
  if (getpid() != pid_) {  // RequireOwner
    Abandon(f);
    Abandon(conn_);
    return;
  }
  if (!f) return;
  // Not closed by the program: release the open, as a garbage-collected
  // Python file does; an error has nobody to go to.
  auto close = [&] { (void)conn_->Close(f); };
  if (PyGILState_Check()) {
    py::gil_scoped_release nogil;
    close();
  } else {
    close();
  }
}

std::shared_ptr<client::File> File::Handle() {
  RequireOwner(pid_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!f_) throw py::value_error("I/O operation on closed file");
  return f_;
}

uint64_t File::size() { return Handle()->size(); }

bool File::closed() {
  std::lock_guard<std::mutex> lock(mu_);
  return !f_;
}

void File::RequireReadable() const {
  if (!readable()) throw SfsError{Status(EBADF, "file not open for reading"), path_};
}

void File::RequireWritable() const {
  if (!writable()) throw SfsError{Status(EBADF, "file not open for writing"), path_};
}

std::string File::mode() const {
  bool append = flags_ & O_APPEND;
  switch (flags_ & O_ACCMODE) {
    case O_RDONLY: return "rb";
    case O_WRONLY: return append ? "ab" : (flags_ & O_EXCL) ? "xb" : "wb";
    default: return append ? "a+b" : "r+b";
  }
}

py::bytes File::ReadBytes(int64_t n, std::optional<uint64_t> at) {
  auto f = Handle();
  RequireReadable();
  auto lock = LockPosition(pos_mu_, at);
  uint64_t off = at ? *at : pos_;
  size_t want = n >= 0 ? static_cast<size_t>(n)
                       : static_cast<size_t>(std::max(f->size(), off) - off) + kReadAllSlack;
  BytesBuffer out(want);
  size_t got = 0;
  for (;;) {
    auto r = Blocking([&] {
      return conn_->Read(*f, off + got, std::span<uint8_t>(out.data() + got, want - got));
    });
    got += Check(std::move(r), path_);
    // Read is short only at end of file; a full read-to-end may have more.
    if (n >= 0 || got < want) break;
    want *= 2;
    out.Resize(want);
  }
  out.Resize(got);
  if (!at) pos_ = off + got;
  return out.Release();
}

size_t File::ReadInto(const py::buffer& buf, std::optional<uint64_t> at) {
  auto f = Handle();
  RequireReadable();
  BufferView view(buf, /*writable=*/true);
  auto lock = LockPosition(pos_mu_, at);
  uint64_t off = at ? *at : pos_;
  auto r = Blocking([&] {
    return conn_->Read(*f, off, std::span<uint8_t>(view.data(), view.size()));
  });
  size_t got = Check(std::move(r), path_);
  if (!at) pos_ = off + got;
  return got;
}

py::bytes File::Read(int64_t n) { return ReadBytes(n, std::nullopt); }
size_t File::Readinto(const py::buffer& buf) { return ReadInto(buf, std::nullopt); }
size_t File::Preadinto(const py::buffer& buf, uint64_t off) { return ReadInto(buf, off); }

py::bytes File::Pread(int64_t n, uint64_t off) {
  if (n < 0) throw py::value_error("pread needs a byte count >= 0");
  return ReadBytes(n, off);
}

Result<uint64_t> File::WriteAt(const std::shared_ptr<client::File>& f, uint64_t off,
                               std::span<const uint8_t> buf) {
  if (flags_ & O_APPEND) {
    uint64_t where = 0;
    SFS_ASSIGN_OR_RETURN(size_t n, conn_->Append(f, buf, &where));
    (void)n;
    return where;
  }
  Result<size_t> r = write_behind_ ? conn_->WriteBehind(f, off, buf) : conn_->Write(*f, off, buf);
  if (!r.ok()) return r.status();
  return off;
}

size_t File::Write(const py::buffer& buf) {
  auto f = Handle();
  RequireWritable();
  BufferView view(buf, /*writable=*/false);
  auto lock = LockPosition(pos_mu_, std::nullopt);
  std::span<const uint8_t> data(view.data(), view.size());
  if (data.empty()) return 0;  // an append of nothing lands nowhere: keep the position
  uint64_t where = Check(Blocking([&] { return WriteAt(f, pos_, data); }), path_);
  pos_ = where + data.size();
  return data.size();
}

size_t File::Pwrite(const py::buffer& buf, uint64_t off) {
  auto f = Handle();
  RequireWritable();
  BufferView view(buf, /*writable=*/false);
  std::span<const uint8_t> data(view.data(), view.size());
  // At off even with O_APPEND (Linux's pwrite would append; Python's os.pwrite
  // inherits that, this does not).
  auto r = Blocking([&] {
    return write_behind_ ? conn_->WriteBehind(f, off, data) : conn_->Write(*f, off, data);
  });
  return Check(std::move(r), path_);
}

uint64_t File::Seek(int64_t off, int whence) {
  auto f = Handle();
  auto lock = LockPosition(pos_mu_, std::nullopt);
  int64_t base = 0;
  if (whence == SEEK_CUR) {
    base = static_cast<int64_t>(pos_);
  } else if (whence == SEEK_END) {
    // The MDS's size, which covers other clients' closed writes; the handle's,
    // which covers this client's unreported ones.
    auto a = Blocking([&] { return conn_->GetAttr(cred_, ino_); });
    base = static_cast<int64_t>(std::max(Check(std::move(a), path_).size, f->size()));
  } else if (whence == SEEK_DATA || whence == SEEK_HOLE) {
    if (off < 0) throw SfsError{Status(ENXIO, "negative offset"), path_};
    auto r = Blocking([&] { return conn_->Seek(*f, static_cast<uint64_t>(off), whence); });
    return pos_ = Check(std::move(r), path_);
  } else if (whence != SEEK_SET) {
    throw py::value_error("invalid whence (" + std::to_string(whence) + ")");
  }
  if (base + off < 0) throw SfsError{Status(EINVAL, "negative seek position"), path_};
  return pos_ = static_cast<uint64_t>(base + off);
}

uint64_t File::Tell() {
  Handle();
  auto lock = LockPosition(pos_mu_, std::nullopt);
  return pos_;
}

uint64_t File::Truncate(std::optional<uint64_t> size) {
  auto f = Handle();
  RequireWritable();
  uint64_t to = size ? *size : Tell();
  client::SetAttrArgs args;
  args.valid = client::kSetSize;
  args.size = to;
  Check(Blocking([&] { return conn_->SetAttr(cred_, ino_, args, f.get()).status(); }), path_);
  return to;
}

void File::Flush() {
  auto f = Handle();
  if (writable()) Check(Blocking([&] { return conn_->Flush(*f); }), path_);
}

void File::Fsync() {
  auto f = Handle();
  Check(Blocking([&] { return conn_->Fsync(*f, /*datasync=*/false); }), path_);
}

void File::Close() {
  RequireOwner(pid_);
  std::shared_ptr<client::File> f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    f = std::move(f_);
  }
  if (!f) return;  // closing twice is fine, as for Python files
  Check(Blocking([&] { return conn_->Close(f); }), path_);
}

}  // namespace sfs::python
