// Target: finds the MDS and inode behind a path (mount mode or --mds mode).
#include "tools/sfs/target.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sfs::tools {
namespace {

// Undoes the octal escapes (\040 for space) of /proc/self/mountinfo fields.
std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// The source ("HOST:PORT") of the StripeFS mount holding `real`, or "";
// its mount point in *mountpoint if not null.
std::string FindMountSource(const std::string& real, std::string* mountpoint = nullptr) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line, best_mp, best_src;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string f[5], tok;
    for (auto& x : f) ls >> x;
    while (ls >> tok && tok != "-") {
    }
    std::string fstype, source;
    ls >> fstype >> source;
    if (fstype != "fuse.sfs") continue;
    std::string mp = Unescape(f[4]);
    bool inside = real == mp || mp == "/" ||
                  (real.compare(0, mp.size(), mp) == 0 && real.size() > mp.size() && real[mp.size()] == '/');
    if (inside && mp.size() >= best_mp.size()) {
      best_mp = mp;
      best_src = source;
    }
  }
  if (best_src.rfind("sfs#", 0) == 0) best_src = best_src.substr(4);
  if (mountpoint != nullptr) *mountpoint = best_mp;
  return best_src;
}

// realpath of path, or of its parent directory plus the last name when path does not exist yet.
std::string RealPathOrParent(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) != nullptr) return buf;
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : p.substr(0, slash));
  if (realpath(dir.c_str(), buf) == nullptr) return "";
  return std::string(buf) + "/" + p.substr(slash == std::string::npos ? 0 : slash + 1);
}

}  // namespace

std::string MountPointOf(const std::string& path) {
  std::string real = RealPathOrParent(path), mp;
  if (real.empty() || FindMountSource(real, &mp).empty()) return "";
  return mp;
}

Result<std::unique_ptr<Target>> Target::Open(const GlobalOptions& g, const std::string& path) {
  auto t = std::make_unique<Target>();
  t->mount_mode_ = g.mds.empty();
  t->mds_ = g.mds;
  if (t->mount_mode_) {
    std::string real = RealPathOrParent(path);
    if (real.empty()) return Status(ENOENT, path + ": No such file or directory");
    t->mds_ = FindMountSource(real);
    if (t->mds_.empty()) return Status(EINVAL, path + ": not a StripeFS path (no fuse.sfs mount holds it)");
  }
  t->cred_.uid = getuid();
  t->cred_.gid = getgid();
  gid_t groups[256];
  int n = getgroups(256, groups);
  for (int i = 0; i < n; ++i) t->cred_.groups.push_back(groups[i]);
  client::Options opts;
  opts.mds_address = t->mds_;
  // An MDS that serves tenants only (`sfs tenant require on`) takes admin
  // commands from an admin tenant (fileset /, no root squash).
  if (const char* tenant = std::getenv("SFS_TENANT")) opts.tenant = tenant;
  if (const char* keyfile = std::getenv("SFS_KEYFILE")) opts.keyfile = keyfile;
  opts.io_threads = 1;
  SFS_ASSIGN_OR_RETURN(t->client_, client::Client::Connect(opts));
  return t;
}

Result<client::Attr> Target::Stat(const std::string& path) {
  if (!mount_mode_) return client_->ResolvePath(cred_, path);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(path);
  return client_->GetAttr(cred_, st.st_ino);
}

Status Target::SplitParent(const std::string& path, uint64_t* parent, std::string* name) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : p.substr(0, slash));
  *name = slash == std::string::npos ? p : p.substr(slash + 1);
  SFS_ASSIGN_OR_RETURN(client::Attr a, Stat(dir));
  if (!S_ISDIR(a.mode)) return Status(ENOTDIR, dir + ": Not a directory");
  *parent = a.ino;
  return Status::Ok();
}

std::string HumanSize(uint64_t bytes) {
  static const char* kUnits[] = {"", "K", "M", "G", "T", "P"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%llu", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof(buf), v < 10 ? "%.1f%s" : "%.0f%s", v, kUnits[u]);
  }
  return buf;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

}  // namespace sfs::tools
