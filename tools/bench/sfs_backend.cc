// Backend over libsfs directly (sfs-bench -a SFS): no FUSE and no kernel
// between the benchmark and the servers, so the figures show what the
// client library and the servers cost, and the difference to -a POSIX on a
// mount shows what FUSE adds.
//
// Paths are walked from the root once per directory: the inode of every
// directory the task has resolved or created is cached (dropped on rmdir),
// so creating or stat-ing an item costs one MDS round trip, as it does
// through the kernel's dentry cache on a mount.
#include <unistd.h>

#include <cstdlib>
#include <unordered_map>

#include "client/lib/client.h"
#include "tools/bench/backend.h"

namespace sfs::bench {
namespace {

using client::Client;

Status WithPath(const Status& st, const char* op, const std::string& path) {
  return Status(st.code(), std::string(op) + " " + path + ": " + st.ToString());
}

client::Cred ProcessCred() {
  client::Cred c{static_cast<uint32_t>(getuid()), static_cast<uint32_t>(getgid()), {}};
  gid_t groups[256];
  int n = getgroups(256, groups);
  for (int i = 0; i < n; ++i) c.groups.push_back(static_cast<uint32_t>(groups[i]));
  return c;
}

class SfsFile final : public BenchFile {
 public:
  SfsFile(Client* c, std::shared_ptr<client::File> f, std::string path)
      : client_(c), file_(std::move(f)), path_(std::move(path)) {}
  ~SfsFile() override {
    if (file_) (void)client_->Close(file_);
  }

  Status WriteAt(uint64_t off, std::span<const uint8_t> buf) override {
    Result<size_t> n = client_->Write(*file_, off, buf);
    if (!n.ok()) return WithPath(n.status(), "write", path_);
    return Status::Ok();
  }
  Result<size_t> ReadAt(uint64_t off, std::span<uint8_t> buf) override {
    size_t done = 0;
    while (done < buf.size()) {  // Read is short only at end of file; loop anyway
      Result<size_t> n = client_->Read(*file_, off + done, buf.subspan(done));
      if (!n.ok()) return WithPath(n.status(), "read", path_);
      if (*n == 0) break;
      done += *n;
    }
    return done;
  }
  Status Sync() override {
    Status st = client_->Fsync(*file_, false);
    return st.ok() ? st : WithPath(st, "fsync", path_);
  }
  Status Close() override {
    std::shared_ptr<client::File> f = std::move(file_);
    Status st = client_->Close(f);
    return st.ok() ? st : WithPath(st, "close", path_);
  }

 private:
  Client* client_;
  std::shared_ptr<client::File> file_;
  std::string path_;
};

class SfsBackend final : public Backend {
 public:
  SfsBackend(std::unique_ptr<Client> c) : client_(std::move(c)), cred_(ProcessCred()) {}

  Result<std::unique_ptr<BenchFile>> Open(const std::string& path, int flags) override {
    std::string name;
    SFS_ASSIGN_OR_RETURN(uint64_t parent, SplitPath(path, &name));
    client::Attr attr;
    Result<std::shared_ptr<client::File>> f = Status(EIO, "");
    if (flags & O_CREAT) {
      f = client_->Create(cred_, parent, name, 0644, flags, &attr);
    } else {  // one MDS round trip, as open(2) through the mount costs
      f = client_->OpenPath(cred_, Normalize(path), flags, &attr);
    }
    if (!f.ok()) return WithPath(f.status(), "open", path);
    return std::unique_ptr<BenchFile>(new SfsFile(client_.get(), std::move(*f), path));
  }

  Status Mkdir(const std::string& path) override {
    std::string name;
    SFS_ASSIGN_OR_RETURN(uint64_t parent, SplitPath(path, &name));
    Result<client::Attr> a = client_->Mkdir(cred_, parent, name, 0755);
    if (!a.ok()) return WithPath(a.status(), "mkdir", path);
    dirs_[Normalize(path)] = a->ino;
    return Status::Ok();
  }

  Status Rmdir(const std::string& path) override {
    std::string name;
    SFS_ASSIGN_OR_RETURN(uint64_t parent, SplitPath(path, &name));
    dirs_.erase(Normalize(path));
    Status st = client_->Rmdir(cred_, parent, name);
    return st.ok() ? st : WithPath(st, "rmdir", path);
  }

  Status Unlink(const std::string& path) override {
    std::string name;
    SFS_ASSIGN_OR_RETURN(uint64_t parent, SplitPath(path, &name));
    Status st = client_->Unlink(cred_, parent, name);
    return st.ok() ? st : WithPath(st, "unlink", path);
  }

  Result<BenchStat> Stat(const std::string& path) override {
    std::string norm = Normalize(path);
    Result<client::Attr> a = Status(EIO, "");
    if (norm == "/") {
      a = client_->GetAttr(cred_, client::kRootIno);
    } else {
      std::string name;
      SFS_ASSIGN_OR_RETURN(uint64_t parent, SplitPath(path, &name));
      a = client_->Lookup(cred_, parent, name);
    }
    if (!a.ok()) return WithPath(a.status(), "stat", path);
    return BenchStat{a->size, S_ISDIR(a->mode)};
  }

 private:
  // Collapses repeated and trailing slashes, so that cache keys are canonical.
  static std::string Normalize(const std::string& path) {
    std::string out;
    for (char ch : path) {
      if (ch == '/' && !out.empty() && out.back() == '/') continue;
      out.push_back(ch);
    }
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
  }

  // The inode of path's parent directory (cached) and path's last name.
  Result<uint64_t> SplitPath(const std::string& path, std::string* name) {
    std::string norm = Normalize(path);
    if (norm.empty() || norm[0] != '/' || norm == "/") {
      return Status(EINVAL, path + ": want an absolute path inside the file system");
    }
    size_t slash = norm.rfind('/');
    *name = norm.substr(slash + 1);
    return DirIno(slash == 0 ? "/" : norm.substr(0, slash));
  }

  Result<uint64_t> DirIno(const std::string& dir) {
    if (dir == "/") return client::kRootIno;
    auto it = dirs_.find(dir);
    if (it != dirs_.end()) return it->second;
    Result<client::Attr> a = client_->ResolvePath(cred_, dir);
    if (!a.ok()) return WithPath(a.status(), "lookup", dir);
    if (!S_ISDIR(a->mode)) return Status(ENOTDIR, dir + ": not a directory");
    dirs_[dir] = a->ino;
    return a->ino;
  }

  std::unique_ptr<Client> client_;
  client::Cred cred_;
  std::unordered_map<std::string, uint64_t> dirs_;
};

}  // namespace

Result<std::unique_ptr<Backend>> MakeSfsBackend(const std::string& mds,
                                                const std::string& transport) {
  if (mds.empty()) return Status(EINVAL, "-a SFS needs --mds HOST:PORT");
  client::Options opts;
  opts.mds_address = mds;
  SFS_ASSIGN_OR_RETURN(opts.transport, client::ParseTransport(transport));
  // Closes as through sfs-mount (-o close_delay_ms, default 10): the release
  // of a handle that wrote nothing rides on the next MDS request.
  opts.close_delay = std::chrono::milliseconds(10);
  // The client cache (docs/cache.md), from the environment as a mount's -o
  // cache_* would set it: SFS_CACHE_RAM, SFS_CACHE_DIR, SFS_CACHE_SIZE.
  for (auto [name, field] : {std::pair{"SFS_CACHE_RAM", &opts.cache_ram},
                             std::pair{"SFS_CACHE_SIZE", &opts.cache_size}}) {
    if (const char* v = std::getenv(name)) {
      Result<uint64_t> n = client::ParseSize(v);
      if (!n.ok()) return Status(EINVAL, std::string(name) + ": not a size: '" + v + "'");
      *field = *n;
    }
  }
  if (const char* d = std::getenv("SFS_CACHE_DIR")) opts.cache_dir = d;
  SFS_ASSIGN_OR_RETURN(std::unique_ptr<Client> c, Client::Connect(opts));
  return std::unique_ptr<Backend>(new SfsBackend(std::move(c)));
}

}  // namespace sfs::bench
