// stripefs.Client: path-based calls over libsfs's inode API. Each method
// converts its Python arguments with the GIL held, makes its libsfs calls in
// one Blocking() region, then builds its Python result.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "client/python/binding.h"

namespace sfs::python {
namespace {

using std::chrono::milliseconds;

milliseconds Seconds(double s, const char* what) {
  if (!(s > 0)) throw py::value_error(std::string(what) + " must be a positive number of seconds");
  return milliseconds(static_cast<int64_t>(s * 1000 + 0.5));
}

// "/a/b" for "a/b", "/a/b/", "//a//b": ResolvePath wants it absolute; the
// trailing slashes would leave an empty last name.
std::string Normalise(std::string p) {
  if (p.empty()) throw SfsError{Status(ENOENT, "empty path"), p};
  if (p[0] != '/') p.insert(p.begin(), '/');
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

client::Cred ProcessCred(const ConnectArgs& a) {
  client::Cred c;
  c.uid = a.uid.value_or(getuid());
  c.gid = a.gid.value_or(getgid());
  if (!a.uid && !a.gid) {  // explicit ids act as that user alone, as setuid would
    gid_t groups[256];
    int n = getgroups(256, groups);
    for (int i = 0; i < n; ++i) c.groups.push_back(groups[i]);
  }
  return c;
}

// Python's open() modes (binary only), or os.O_* flags given as an int.
int ParseMode(const py::object& mode) {
  if (py::isinstance<py::int_>(mode)) return mode.cast<int>();
  std::string m = mode.cast<std::string>();
  int base = -1, plus = 0;
  for (char ch : m) {
    int b = -1;
    switch (ch) {
      case 'r': b = 0; break;
      case 'w': b = O_CREAT | O_TRUNC; break;
      case 'x': b = O_CREAT | O_EXCL; break;
      case 'a': b = O_CREAT | O_APPEND; break;
      case '+': plus++; continue;
      case 'b': continue;
      case 't': throw py::value_error("stripefs files are binary only: mode '" + m + "'");
      default: throw py::value_error("invalid mode: '" + m + "'");
    }
    if (base >= 0) throw py::value_error("invalid mode: '" + m + "'");
    base = b;
  }
  if (base < 0 || plus > 1) throw py::value_error("invalid mode: '" + m + "'");
  if (plus) return base | O_RDWR;
  return base | (base == 0 ? O_RDONLY : O_WRONLY);
}

// The process's umask, read without changing it: umask(2) can only be read
// by setting it, which would race with every other thread creating files.
uint32_t ProcessUmask() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Umask:", 0) == 0) {
      return static_cast<uint32_t>(std::stoul(line.substr(6), nullptr, 8));
    }
  }
  return 022;
}

py::dict LayoutDict(const client::LayoutSpec& l) {
  py::list objects;
  for (const client::StripeObject& o : l.objects) {
    py::dict d;
    d["ost"] = o.ost;
    d["oid"] = o.oid;
    d["mirror"] = o.mirror;
    d["stale"] = o.stale;
    objects.append(d);
  }
  py::dict d;
  d["stripe_count"] = l.stripe_count;
  d["stripe_size"] = l.stripe_size;
  d["stripe_offset"] = l.objects.empty() ? l.start_ost : static_cast<int32_t>(l.objects[0].ost);
  d["pool"] = l.pool;
  d["mirror_count"] = l.mirror_count;
  d["ec_data"] = l.ec_data;
  d["ec_parity"] = l.ec_parity;
  d["inherited"] = l.inherited;
  d["objects"] = objects;
  return d;
}

}  // namespace

std::shared_ptr<Client> Client::Connect(const ConnectArgs& a) {
  client::Options o;
  o.mds_address = a.address;
  o.rpc_timeout = Seconds(a.rpc_timeout, "rpc_timeout");
  o.connect_timeout = Seconds(a.connect_timeout, "connect_timeout");
  o.recovery_timeout = Seconds(a.recovery_timeout, "recovery_timeout");
  if (a.io_threads < 1 || a.io_threads > 256) throw py::value_error("io_threads must be 1..256");
  o.io_threads = a.io_threads;
  o.transport = Check(client::ParseTransport(a.transport));
  o.write_behind_bytes = a.write_behind;
  if (a.close_delay < 0 || a.close_delay > 10) throw py::value_error("close_delay must be 0..10 seconds");
  o.close_delay = std::chrono::milliseconds(static_cast<int64_t>(a.close_delay * 1000));
  o.cache_dir = a.cache_dir;
  o.cache_size = a.cache_size;
  o.cache_ram = a.cache_ram;
  o.cache_read_ahead = a.cache_read_ahead;
  if (a.prefetch_threads < 1 || a.prefetch_threads > 256) {
    throw py::value_error("prefetch_threads must be 1..256");
  }
  if (a.prefetch_depth == 0) throw py::value_error("prefetch_depth must be > 0");
  o.prefetch_threads = a.prefetch_threads;
  o.prefetch_depth = a.prefetch_depth;
  o.tenant = a.tenant;
  o.keyfile = a.keyfile;
  auto conn = Blocking([&] { return client::Client::Connect(o); });
  std::shared_ptr<client::Client> shared = Check(std::move(conn), a.address);
  return std::shared_ptr<Client>(
      new Client(std::move(shared), ProcessCred(a), ProcessUmask(), a.write_behind));
}

Client::~Client() {
  // The last reference may go with the GIL held (garbage collection); the
  // connection's threads are joined without it.
  std::shared_ptr<client::Client> c = std::move(conn_);
  if (getpid() != pid_) {
    Abandon(c);
    return;
  }
  if (c && PyGILState_Check()) {
    py::gil_scoped_release nogil;
    c.reset();
  }
}

std::shared_ptr<client::Client> Client::Conn() {
  RequireOwner(pid_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!conn_) throw py::value_error("operation on a closed stripefs.Client");
  return conn_;
}

void Client::Close() {
  std::shared_ptr<client::Client> c;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c = std::move(conn_);
  }
  if (getpid() != pid_) {
    Abandon(c);
    return;
  }
  Blocking([&] { c.reset(); });  // open Files still hold it; it goes with the last
}

void Client::Prefetch(const py::iterable& entries, uint64_t lookahead, bool append) {
  std::vector<client::PrefetchItem> items;
  for (const py::handle& e : entries) {
    client::PrefetchItem it;
    if (py::isinstance<py::tuple>(e)) {
      py::tuple t = py::reinterpret_borrow<py::tuple>(e);
      if (t.size() != 3) throw py::value_error("a hint entry is a path or (path, offset, length)");
      it.path = Normalise(PathArg(t[0]));
      it.offset = t[1].cast<uint64_t>();
      it.length = t[2].is_none() ? UINT64_MAX : t[2].cast<uint64_t>();
    } else {
      it.path = Normalise(PathArg(e));
    }
    items.push_back(std::move(it));
  }
  auto c = Conn();
  Check(Blocking([&] { return c->Prefetch(cred_, std::move(items), lookahead, append); }));
}

bool Client::WaitPrefetch(double timeout) {
  auto c = Conn();
  milliseconds t = Seconds(timeout, "timeout");
  return Check(Blocking([&] { return c->WaitPrefetch(t); }));
}

py::dict Client::CacheStatus() {
  auto c = Conn();
  client::CacheStats s = Check(Blocking([&] { return c->CacheStatus(); }));
  py::dict d;
  d["hits"] = s.hits;
  d["misses"] = s.misses;
  d["hit_rate"] = s.hits + s.misses == 0 ? 0.0 : double(s.hits) / double(s.hits + s.misses);
  d["hit_bytes"] = s.hit_bytes;
  d["miss_bytes"] = s.miss_bytes;
  d["bytes"] = s.bytes;
  d["capacity"] = s.capacity;
  d["ram_bytes"] = s.ram_bytes;
  d["ram_capacity"] = s.ram_capacity;
  d["blocks"] = s.blocks;
  d["evictions"] = s.evictions;
  d["corrupt"] = s.corrupt;
  d["prefetched_blocks"] = s.prefetched_blocks;
  d["prefetched_bytes"] = s.prefetched_bytes;
  d["prefetch_files"] = s.prefetch_files;
  d["prefetch_skipped"] = s.prefetch_skipped;
  d["hint_length"] = s.hint_length;
  d["hint_done"] = s.hint_done;
  d["hint_window"] = s.hint_window;
  d["hint_waiting"] = s.hint_waiting;
  d["read_ahead_bytes"] = s.read_ahead_bytes;
  d["hinted_lookups"] = s.hinted_lookups;
  d["joined_bytes"] = s.joined_bytes;
  d["dir"] = s.dir.empty() ? py::object(py::none()) : py::object(py::str(s.dir));
  return d;
}

void Client::DropCache() {
  auto c = Conn();
  Check(Blocking([&] { return c->DropCache(); }));
}

std::pair<uint64_t, std::string> Client::Parent(const std::string& path) {
  std::string p = Normalise(path);
  if (p == "/") throw SfsError{Status(EINVAL, "the root has no name in a directory"), path};
  size_t slash = p.rfind('/');
  std::string dir = slash == 0 ? "/" : p.substr(0, slash);
  client::Attr d = Resolve(dir);
  if (!S_ISDIR(d.mode)) throw SfsError{Status(ENOTDIR, "not a directory"), dir};
  return {d.ino, p.substr(slash + 1)};
}

client::Attr Client::Resolve(const std::string& path) {
  std::string p = Normalise(path);
  auto c = Conn();
  return Check(Blocking([&] { return c->ResolvePath(cred_, p); }), path);
}

std::shared_ptr<File> Client::Open(const py::object& path_obj, const py::object& mode,
                                   uint32_t perm) {
  std::string path = PathArg(path_obj);
  int flags = ParseMode(mode);
  auto c = Conn();
  client::Attr attr;
  std::shared_ptr<client::File> f;
  if (flags & O_CREAT) {
    auto [parent, name] = Parent(path);
    f = Check(Blocking([&] {
                return c->Create(cred_, parent, name, S_IFREG | (perm & 07777 & ~umask_), flags,
                                 &attr);
              }),
              path);
  } else {
    // One MDS round trip whatever the depth, not a lookup per name (issue 18).
    std::string p = Normalise(path);
    f = Check(Blocking([&] { return c->OpenPath(cred_, p, flags, &attr); }), path);
  }
  if (!S_ISREG(attr.mode)) {
    // A directory opens read-only at the MDS (readdir's open); as a file it is EISDIR.
    Status st = Blocking([&] { return c->Close(f); });
    (void)st;
    throw SfsError{Status(S_ISDIR(attr.mode) ? EISDIR : EINVAL, "not a regular file"), path};
  }
  return std::make_shared<File>(c, cred_, std::move(f), path, flags, write_behind_ > 0);
}

StatResult Client::Stat(const py::object& path) {
  return StatResult::From(Resolve(PathArg(path)));
}

bool Client::Exists(const py::object& path) {
  try {
    Resolve(PathArg(path));
    return true;
  } catch (const SfsError& e) {
    if (e.status.code() == ENOENT || e.status.code() == ENOTDIR) return false;
    throw;
  }
}

py::list Client::Listdir(const py::object& path_obj) {
  std::string path = PathArg(path_obj);
  client::Attr dir = Resolve(path);
  if (!S_ISDIR(dir.mode)) throw SfsError{Status(ENOTDIR, "not a directory"), path};
  auto c = Conn();
  std::vector<std::string> names;
  Status st = Blocking([&] {
    std::string after;
    for (;;) {
      Result<client::DirPage> page = c->Readdir(cred_, dir.ino, after, 1024, false);
      if (!page.ok()) return page.status();
      for (client::DirEntry& e : page->entries) {
        if (e.name != "." && e.name != "..") names.push_back(e.name);
      }
      if (page->eof || page->entries.empty()) return Status::Ok();
      after = page->entries.back().name;
    }
  });
  Check(st, path);
  py::list out;
  for (const std::string& n : names) {
    // As os.listdir(str): undecodable bytes come back as surrogate escapes.
    out.append(py::reinterpret_steal<py::object>(
        PyUnicode_DecodeFSDefaultAndSize(n.data(), static_cast<Py_ssize_t>(n.size()))));
  }
  return out;
}

void Client::Mkdir(const py::object& path_obj, uint32_t mode) {
  std::string path = PathArg(path_obj);
  if (Normalise(path) == "/") throw SfsError{Status(EEXIST, "the root exists"), path};
  auto [parent, name] = Parent(path);
  auto c = Conn();
  Check(Blocking([&] { return c->Mkdir(cred_, parent, name, mode & 07777 & ~umask_); }), path);
}

void Client::Unlink(const py::object& path_obj) {
  std::string path = PathArg(path_obj);
  auto [parent, name] = Parent(path);
  auto c = Conn();
  Check(Blocking([&] { return c->Unlink(cred_, parent, name); }), path);
}

void Client::Rmdir(const py::object& path_obj) {
  std::string path = PathArg(path_obj);
  if (Normalise(path) == "/") throw SfsError{Status(EBUSY, "cannot remove the root"), path};
  auto [parent, name] = Parent(path);
  auto c = Conn();
  Check(Blocking([&] { return c->Rmdir(cred_, parent, name); }), path);
}

void Client::Rename(const py::object& src_obj, const py::object& dst_obj) {
  std::string src = PathArg(src_obj), dst = PathArg(dst_obj);
  auto [sp, sn] = Parent(src);
  auto [dp, dn] = Parent(dst);
  auto c = Conn();
  Check(Blocking([&] { return c->Rename(cred_, sp, sn, dp, dn, 0); }), src);
}

void Client::Truncate(const py::object& path_obj, uint64_t size) {
  std::string path = PathArg(path_obj);
  client::Attr a = Resolve(path);
  auto c = Conn();
  client::SetAttrArgs args;
  args.valid = client::kSetSize;
  args.size = size;
  Check(Blocking([&] { return c->SetAttr(cred_, a.ino, args); }), path);
}

void Client::Setstripe(const py::object& path_obj, int32_t count, uint64_t size,
                       const std::string& pool, int32_t start_ost, uint32_t mirror_count,
                       uint32_t ec_data, uint32_t ec_parity) {
  std::string path = PathArg(path_obj);
  if (count < -1) throw py::value_error("count must be -1 (all OSTs), 0 (inherit) or more");
  client::LayoutSpec spec;
  spec.stripe_count = count;
  spec.stripe_size = size;
  spec.pool = pool;
  spec.start_ost = start_ost;
  spec.mirror_count = mirror_count;
  if ((ec_data == 0) != (ec_parity == 0)) throw py::value_error("ec_data and ec_parity go together");
  spec.ec_data = ec_data;
  spec.ec_parity = ec_parity;
  auto c = Conn();
  std::optional<client::Attr> a;
  try {
    a = Resolve(path);
  } catch (const SfsError& e) {
    if (e.status.code() != ENOENT) throw;
  }
  if (!a) {  // as `sfs setstripe`: a new, empty file with this layout
    auto [parent, name] = Parent(path);
    Check(Blocking([&]() -> Status {
            client::Attr attr;
            SFS_ASSIGN_OR_RETURN(auto f, c->Create(cred_, parent, name, S_IFREG | (0666 & ~umask_),
                                                   O_CREAT | O_EXCL | O_WRONLY, &attr, &spec));
            return c->Close(f);
          }),
          path);
    return;
  }
  if (!S_ISDIR(a->mode) && !S_ISREG(a->mode)) {
    throw SfsError{Status(EINVAL, "not a regular file or directory"), path};
  }
  if (S_ISREG(a->mode) && a->size > 0) {
    throw SfsError{Status(EBUSY, "file has data; restriping it needs 'sfs migrate'"), path};
  }
  Check(Blocking([&] { return c->SetLayout(cred_, a->ino, spec, false); }), path);
}

py::dict Client::Getstripe(const py::object& path_obj) {
  std::string path = PathArg(path_obj);
  client::Attr a = Resolve(path);
  auto c = Conn();
  client::LayoutSpec l = Check(Blocking([&] { return c->GetLayout(cred_, a.ino); }), path);
  return LayoutDict(l);
}

py::bytes Client::KvCapability() {
  auto c = Conn();
  return py::bytes(Check(Blocking([&] { return c->KvCapability(); })));
}

py::list Client::Osts() {
  auto c = Conn();
  std::vector<client::OstStatus> osts = Check(Blocking([&] { return c->ListOsts(); }));
  py::list out;
  for (const client::OstStatus& o : osts) {
    py::dict d;
    d["index"] = o.index;
    d["uuid"] = o.uuid;
    d["address"] = o.address;
    d["up"] = o.up;
    d["total_bytes"] = o.total_bytes;
    d["free_bytes"] = o.free_bytes;
    d["avail_bytes"] = o.avail_bytes;
    out.append(d);
  }
  return out;
}

}  // namespace sfs::python
