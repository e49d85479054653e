// Test-only helpers shared by the object store's tests: where an object's
// file lies on an OST (common/ondisk/ost_dir.h, whose test pins the layout),
// and StoreFixture, a file ObjectStore over a fresh directory's OST "ost0".
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/ondisk/ost_dir.h"
#include "oss/store/object_store.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {

// The data file of object oid on the OST whose directory is ost_dir.
inline std::string ObjectFile(const std::string& ost_dir, uint64_t oid) {
  return ondisk::ObjectPath(ost_dir, oid);
}

class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }

  // (Re)opens the store; env null: the real file system.
  void Open(bool checksums = true, Env* env = nullptr) {
    store_.reset();
    FileStoreOptions opts;
    opts.checksums = checksums;
    opts.env = env;
    auto s = OpenFileObjectStore(dir_.path() + "/ost0", opts);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  std::string ObjectPath(uint64_t oid) const { return ObjectFile(dir_.path() + "/ost0", oid); }

  void WriteOk(uint64_t oid, uint64_t off, const std::vector<uint8_t>& data) {
    Status st = store_->Write(oid, off, data, false);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // Flips bits of byte `at` of the object's file behind the store's back.
  void FlipByteOnDisk(uint64_t oid, uint64_t at) {
    int fd = ::open(ObjectPath(oid).c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t b = 0;
    ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(at)), 1);
    b ^= 0x40;
    ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(at)), 1);
    ::close(fd);
  }

  TempDir dir_;
  std::unique_ptr<ObjectStore> store_;
};

}  // namespace sfs::oss
