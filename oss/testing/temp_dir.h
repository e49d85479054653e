// TempDir: a fresh directory under $TMPDIR (or /tmp), or under a base the
// test names, for one test, removed with everything in it when the test ends.
// path() is empty iff the directory could not be made. Test-only.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sfs::oss {

class TempDir {
 public:
  TempDir() : TempDir(DefaultBase()) {}
  explicit TempDir(const std::string& base) {
    std::string tmpl = base + "/sfs-oss-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // $TMPDIR, or /tmp when it is unset or empty.
  static std::string DefaultBase() {
    const char* base = std::getenv("TMPDIR");
    return base && *base ? base : "/tmp";
  }

 private:
  std::string path_;
};

}  // namespace sfs::oss
