// TempDir: a fresh directory under $TMPDIR (or /tmp) for one test, removed
// with everything in it when the test ends. Test-only.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace sfs::oss {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/sfs-oss-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace sfs::oss
