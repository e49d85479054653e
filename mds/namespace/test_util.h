// Test fixture for the namespace unit tests: a real LevelDB in a fresh temp
// directory, an OST registry with four fake OSTs, and short helpers that
// issue one op each. Reopen() closes and reopens everything on the same
// directory, as a restart would.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "mds/namespace/keys.h"
#include "mds/namespace/kv_store.h"
#include "mds/namespace/namespace.h"
#include "mds/namespace/ost_registry.h"

namespace sfs::mds {

inline std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "mds_test.XXXXXX").string();
  char* dir = mkdtemp(tmpl.data());
  if (dir == nullptr) abort();
  return tmpl;
}

inline OpCtx RootCtx() { return OpCtx{}; }
inline OpCtx UserCtx(uint32_t uid, uint32_t gid = 100) {
  OpCtx c;
  c.cred.uid = uid;
  c.cred.gid = gid;
  return c;
}

class NamespaceTest : public ::testing::Test {
 protected:
  static constexpr int kOsts = 4;

  void SetUp() override {
    dir_ = MakeTempDir();
    Open();
  }
  void TearDown() override {
    Close();
    std::filesystem::remove_all(dir_);
  }
  void Open() {
    auto store = OpenLevelDbStore(dir_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    osts_ = std::make_unique<OstRegistry>(store_.get());
    ASSERT_TRUE(osts_->Load(NowMs()).ok());
    if (osts_->KnownCount() == 0) RegisterOsts();
    ns_ = std::make_unique<Namespace>(store_.get(), osts_.get(), opts_);
    ASSERT_TRUE(ns_->Start(NowMs()).ok());
  }
  void Close() {
    ns_.reset();
    osts_.reset();
    store_.reset();
  }
  void Reopen() {
    Close();
    Open();
  }
  // OST i served by an OSS of its own at OssAddress(i), as in the default
  // clusters (mirror copies and EC chunks need distinct OSSes).
  static std::string OssAddress(uint32_t ost) { return "127.0.0.1:" + std::to_string(9 + ost); }
  void RegisterOsts() {
    for (int i = 0; i < kOsts; ++i) {
      OstReport r;
      r.uuid = "uuid-" + std::to_string(i);
      r.stats.total_bytes = uint64_t{100} << 30;
      r.stats.avail_bytes = r.stats.free_bytes = uint64_t{50} << 30;
      ASSERT_TRUE(osts_->Register(OssAddress(static_cast<uint32_t>(i)), {r}, NowMs()).ok());
    }
  }

  Result<proto::Attr> Mkdir(uint64_t parent, const std::string& name, uint32_t mode = 0755,
                            const OpCtx& ctx = RootCtx()) {
    proto::MkdirReq req;
    req.set_parent(parent);
    req.set_name(name);
    req.set_mode(mode);
    proto::Attr out;
    SFS_RETURN_IF_ERROR(ns_->Mkdir(ctx, req, &out));
    return out;
  }
  Result<proto::OpenResp> Create(uint64_t parent, const std::string& name, bool excl = false,
                                 const OpCtx& ctx = RootCtx(), uint32_t mode = 0644) {
    proto::CreateReq req;
    req.set_parent(parent);
    req.set_name(name);
    req.set_mode(mode);
    req.set_excl(excl);
    req.set_open_flags(O_RDWR | O_CREAT);
    proto::OpenResp out;
    SFS_RETURN_IF_ERROR(ns_->Create(ctx, req, &out));
    return out;
  }
  // Creates and closes a file; its attr.
  Result<proto::Attr> Touch(uint64_t parent, const std::string& name,
                            const OpCtx& ctx = RootCtx(), uint32_t mode = 0644) {
    SFS_ASSIGN_OR_RETURN(proto::OpenResp o, Create(parent, name, false, ctx, mode));
    SFS_RETURN_IF_ERROR(CloseFile(o.attr().ino(), o.open_id()));
    return o.attr();
  }
  Status CloseFile(uint64_t ino, uint64_t open_id, const OpCtx& ctx = RootCtx()) {
    proto::CloseReq req;
    req.set_ino(ino);
    req.set_open_id(open_id);
    return ns_->Close(ctx, req);
  }
  Status Unlink(uint64_t parent, const std::string& name, const OpCtx& ctx = RootCtx()) {
    proto::UnlinkReq req;
    req.set_parent(parent);
    req.set_name(name);
    return ns_->Unlink(ctx, req);
  }
  Status Rmdir(uint64_t parent, const std::string& name, const OpCtx& ctx = RootCtx()) {
    proto::RmdirReq req;
    req.set_parent(parent);
    req.set_name(name);
    return ns_->Rmdir(ctx, req);
  }
  Status Rename(uint64_t p, const std::string& n, uint64_t np, const std::string& nn,
                uint32_t flags = 0, const OpCtx& ctx = RootCtx()) {
    proto::RenameReq req;
    req.set_parent(p);
    req.set_name(n);
    req.set_new_parent(np);
    req.set_new_name(nn);
    req.set_flags(flags);
    return ns_->Rename(ctx, req);
  }
  Result<proto::Attr> Lookup(uint64_t parent, const std::string& name,
                             const OpCtx& ctx = RootCtx()) {
    return ns_->Lookup(ctx.cred, parent, name);
  }
  size_t CountKeys(char tag) {
    size_t n = 0;
    std::string p(1, tag);
    EXPECT_TRUE(store_->Scan(p, keys::PrefixEnd(p), [&](std::string_view, std::string_view) {
      ++n;
      return true;
    }).ok());
    return n;
  }

  std::string dir_;
  NamespaceOptions opts_;
  std::unique_ptr<KvStore> store_;
  std::unique_ptr<OstRegistry> osts_;
  std::unique_ptr<Namespace> ns_;
};

#define EXPECT_ERRNO(expr, err) EXPECT_EQ((expr).code(), (err)) << #expr
#define EXPECT_RESULT_ERRNO(expr, err) EXPECT_EQ((expr).status().code(), (err)) << #expr

}  // namespace sfs::mds
