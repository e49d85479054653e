// Helpers the binding's objects share: errors, path and buffer arguments, stat results.
#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>

#include "client/python/binding.h"

namespace sfs::python {

void Check(const Status& st, const std::string& path) {
  if (!st.ok()) throw SfsError{st, path};
}

void RequireOwner(pid_t owner) {
  if (getpid() != owner) {
    throw std::runtime_error(
        "a stripefs connection cannot be used after fork(): call stripefs.connect() in the child");
  }
}

std::string PathArg(const py::handle& obj) {
  // PyOS_FSPath is os.fspath: str, bytes or an os.PathLike's __fspath__().
  py::object p = py::reinterpret_steal<py::object>(PyOS_FSPath(obj.ptr()));
  if (!p) throw py::error_already_set();
  if (PyUnicode_Check(p.ptr())) {
    p = py::reinterpret_steal<py::object>(PyUnicode_EncodeFSDefault(p.ptr()));
    if (!p) throw py::error_already_set();
  }
  char* data = nullptr;
  Py_ssize_t len = 0;
  if (PyBytes_AsStringAndSize(p.ptr(), &data, &len) != 0) throw py::error_already_set();
  std::string s(data, static_cast<size_t>(len));
  // The MDS would take a NUL as part of a name; Python's os calls refuse it too.
  if (s.find('\0') != std::string::npos) throw py::value_error("embedded null byte in path");
  return s;
}

BufferView::BufferView(const py::handle& obj, bool writable) {
  // PyBUF_SIMPLE asks for one contiguous run of bytes: bytearray, bytes,
  // memoryview slices, C-contiguous numpy arrays and torch tensors (via
  // numpy) all give one; a strided view is refused by its exporter.
  if (PyObject_GetBuffer(obj.ptr(), &view_, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) != 0) {
    throw py::error_already_set();
  }
}

StatResult StatResult::From(const client::Attr& a) {
  StatResult s;
  s.st_ino = a.ino;
  s.st_size = a.size;
  s.st_blocks = a.blocks;
  s.st_rdev = a.rdev;
  s.st_mode = a.mode;
  s.st_uid = a.uid;
  s.st_gid = a.gid;
  s.st_nlink = a.nlink;
  s.st_blksize = 4096;  // what sfs-mount reports to stat(2)
  s.st_atime_ns = a.atime_ns;
  s.st_mtime_ns = a.mtime_ns;
  s.st_ctime_ns = a.ctime_ns;
  return s;
}

}  // namespace sfs::python
