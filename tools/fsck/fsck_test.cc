// fsck on namespaces corrupted on purpose: each kind of damage is found, one
// line per problem, repaired with repair=true, and a second run is clean.
#include "tools/fsck/fsck.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "common/ondisk/ost_dir.h"
#include "mds/namespace/test_util.h"
#include "oss/store/object_store.h"

namespace sfs::mds {
namespace {

class FsckTest : public NamespaceTest {
 protected:
  Result<fsck::Report> Run(bool repair, std::vector<std::string> osts = {}) {
    fsck::Options o;
    o.repair = repair;
    o.ost_dirs = std::move(osts);
    return fsck::Check(store_.get(), o);
  }
  // Runs a check, expects exactly the problems containing `want` (one each),
  // repairs them and expects a clean second run.
  void ExpectFoundAndRepaired(const std::vector<std::string>& want,
                              const std::vector<std::string>& osts = {}) {
    auto found = Run(false, osts);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    std::string all;
    for (const auto& p : found->problems) all += p.text + "\n";
    ASSERT_EQ(found->problems.size(), want.size()) << all;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NE(all.find(want[i]), std::string::npos) << "want '" << want[i] << "' in\n" << all;
    }
    auto fixed = Run(true, osts);
    ASSERT_TRUE(fixed.ok()) << fixed.status().ToString();
    for (const auto& p : fixed->problems) EXPECT_TRUE(p.repaired) << p.text;
    auto again = Run(false, osts);
    ASSERT_TRUE(again.ok());
    for (const auto& p : again->problems) ADD_FAILURE() << "after repair: " << p.text;
  }
  // Builds /d/{f1,f2} and /g (one file closed, one unlinked while open).
  void Populate() {
    auto d = Mkdir(kRootIno, "d");
    ASSERT_TRUE(d.ok());
    d_ = d->ino();
    f1_ = Touch(d_, "f1")->ino();
    f2_ = Touch(d_, "f2")->ino();
    ASSERT_TRUE(Mkdir(kRootIno, "g").ok());
    auto open = Create(kRootIno, "orphan");
    ASSERT_TRUE(open.ok());
    ASSERT_TRUE(Unlink(kRootIno, "orphan").ok());
  }
  void PutInode(uint64_t ino, const std::function<void(proto::InodeRec*)>& change) {
    auto raw = store_->Get(keys::Inode(ino));
    ASSERT_TRUE(raw.ok());
    proto::InodeRec rec;
    ASSERT_TRUE(rec.ParseFromString(*raw));
    change(&rec);
    KvBatch b;
    b.Put(keys::Inode(ino), rec.SerializeAsString());
    ASSERT_TRUE(store_->Write(b, true).ok());
  }
  void DeleteKey(const std::string& key) {
    KvBatch b;
    b.Delete(key);
    ASSERT_TRUE(store_->Write(b, true).ok());
  }
  // Makes /s, whose files get one stripe each, on OST 0; its inode in *ino.
  void MakeOneStripeDir(uint64_t* ino) {
    auto s = Mkdir(kRootIno, "s");
    ASSERT_TRUE(s.ok());
    proto::SetLayoutReq set;
    set.set_ino(s->ino());
    set.mutable_layout()->set_stripe_count(1);
    set.mutable_layout()->set_start_ost(0);
    ASSERT_TRUE(ns_->SetLayout(RootCtx(), set).ok());
    *ino = s->ino();
  }
  // A fake OST dir for index 0 ("uuid-0" in the fixture's registry).
  std::string MakeOst() {
    std::string dir = dir_ + "-ost0";
    for (uint32_t i = 0; i < ondisk::kObjectSubdirs; ++i) {
      std::filesystem::create_directories(ondisk::ObjectSubdir(dir, i));
    }
    std::ofstream(ondisk::OstUuidPath(dir)) << "uuid-0\n";
    return dir;
  }
  // Zeros, so that an empty sidecar (all holes) verifies.
  void WriteObject(const std::string& path, size_t bytes) {
    std::ofstream(path) << std::string(bytes, '\0');
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_ + "-ost0");
    NamespaceTest::TearDown();
  }

  uint64_t d_ = 0, f1_ = 0, f2_ = 0;
};

TEST_F(FsckTest, AHealthyNamespaceWithAnOrphanIsClean) {
  Populate();
  auto r = Run(false);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const auto& p : r->problems) ADD_FAILURE() << p.text;
  EXPECT_EQ(r->orphans, 1u);
  EXPECT_EQ(r->inodes, 6u);
}

TEST_F(FsckTest, ADeletedDentryLeavesALostInodeThatGoesToLostAndFound) {
  Populate();
  DeleteKey(keys::Dentry(d_, "f1"));
  ExpectFoundAndRepaired({"lost inode " + std::to_string(f1_)});
  auto lf = Lookup(kRootIno, "lost+found");
  ASSERT_TRUE(lf.ok());
  auto linked = Lookup(lf->ino(), "#" + std::to_string(f1_));
  ASSERT_TRUE(linked.ok());
  EXPECT_EQ(linked->nlink(), 1u);
  EXPECT_EQ(ns_->GetAttr(kRootIno)->nlink(), 5u) << "root gained lost+found";
}

TEST_F(FsckTest, ABumpedNlinkIsCountedAndFixed) {
  Populate();
  PutInode(f2_, [](proto::InodeRec* r) { r->mutable_attr()->set_nlink(3); });
  PutInode(d_, [](proto::InodeRec* r) { r->mutable_attr()->set_nlink(7); });
  ExpectFoundAndRepaired({"inode " + std::to_string(f2_) + " has nlink 3, counted 1",
                          "inode " + std::to_string(d_) + " has nlink 7, counted 2"});
  EXPECT_EQ(ns_->GetAttr(f2_)->nlink(), 1u);
}

TEST_F(FsckTest, ADentryToAMissingInodeIsRemoved) {
  Populate();
  DeleteKey(keys::Inode(f2_));
  ExpectFoundAndRepaired({"dangling dentry " + std::to_string(d_) + "/\"f2\""});
  EXPECT_RESULT_ERRNO(Lookup(d_, "f2"), ENOENT);
}

TEST_F(FsckTest, AnOrphanRecordOfALinkedInodeIsDropped) {
  Populate();
  KvBatch b;
  b.Put(keys::Orphan(f1_), "");
  ASSERT_TRUE(store_->Write(b, true).ok());
  ExpectFoundAndRepaired({"orphan record for inode " + std::to_string(f1_)});
  EXPECT_TRUE(Lookup(d_, "f1").ok()) << "the file keeps its name";
}

TEST_F(FsckTest, ObjectsOnTheOstAreCrossCheckedWithTheLayouts) {
  uint64_t s = 0;
  ASSERT_NO_FATAL_FAILURE(MakeOneStripeDir(&s));
  std::string ost = MakeOst();
  std::vector<uint64_t> oids;
  for (const char* name : {"a", "b"}) {
    auto o = Create(s, name);
    ASSERT_TRUE(o.ok());
    ASSERT_EQ(o->layout().objects(0).ost(), 0u);
    oids.push_back(o->layout().objects(0).oid());
    proto::CloseReq close;
    close.set_ino(o->attr().ino());
    close.set_open_id(o->open_id());
    close.set_has_size(true);
    close.set_size_hint(100);
    ASSERT_TRUE(ns_->Close(RootCtx(), close).ok());
  }
  WriteObject(ondisk::ObjectPath(ost, oids[0]), 100);
  WriteObject(ondisk::CrcPath(ondisk::ObjectPath(ost, oids[0])), 0);
  auto clean = Run(false, {ost});
  ASSERT_TRUE(clean.ok()) << clean.status().ToString();
  ASSERT_EQ(clean->problems.size(), 1u) << "b's object was never written";
  EXPECT_NE(clean->problems[0].text.find("holding its last byte is missing"), std::string::npos)
      << clean->problems[0].text;
  WriteObject(ondisk::ObjectPath(ost, oids[1]), 100);

  // Damage: a stray object (with sidecar) and a sidecar without its object.
  WriteObject(ondisk::ObjectPath(ost, 999999), 10);
  WriteObject(ondisk::CrcPath(ondisk::ObjectPath(ost, 999999)), 0);
  WriteObject(ondisk::CrcPath(ondisk::ObjectPath(ost, 888888)), 0);
  ExpectFoundAndRepaired({"stray object 0:999999", "crc sidecar without its object"}, {ost});
  EXPECT_FALSE(std::filesystem::exists(ondisk::ObjectPath(ost, 999999)));
  EXPECT_FALSE(std::filesystem::exists(ondisk::CrcPath(ondisk::ObjectPath(ost, 999999))));
  EXPECT_FALSE(std::filesystem::exists(ondisk::CrcPath(ondisk::ObjectPath(ost, 888888))));
  EXPECT_TRUE(std::filesystem::exists(ondisk::ObjectPath(ost, oids[0])));

  // A dropped object file is reported and not "repaired" away.
  std::filesystem::remove(ondisk::ObjectPath(ost, oids[1]));
  auto missing = Run(true, {ost});
  ASSERT_TRUE(missing.ok());
  ASSERT_EQ(missing->problems.size(), 1u);
  EXPECT_NE(missing->problems[0].text.find("object 0:" + std::to_string(oids[1])),
            std::string::npos);
  EXPECT_FALSE(missing->problems[0].repaired);
}

TEST_F(FsckTest, AFlippedByteInAnObjectIsReportedAsItsChunkAndNotRepaired) {
  uint64_t s = 0;
  ASSERT_NO_FATAL_FAILURE(MakeOneStripeDir(&s));
  constexpr size_t kSize = 5 * 4096 + 123;  // the last chunk partly written
  std::vector<uint64_t> oids;
  for (const char* name : {"bad", "good"}) {
    auto o = Create(s, name);
    ASSERT_TRUE(o.ok());
    oids.push_back(o->layout().objects(0).oid());
    proto::CloseReq close;
    close.set_ino(o->attr().ino());
    close.set_open_id(o->open_id());
    close.set_has_size(true);
    close.set_size_hint(kSize);
    ASSERT_TRUE(ns_->Close(RootCtx(), close).ok());
  }
  // Both objects written (with their sidecars) by the OSS's own store.
  std::string ost = dir_ + "-ost0";
  {
    auto store = oss::OpenFileObjectStore(ost);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    std::vector<uint8_t> data(kSize);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
    for (uint64_t oid : oids) ASSERT_TRUE((*store)->Write(oid, 0, data, true).ok());
  }
  std::ofstream(ondisk::OstUuidPath(ost)) << "uuid-0\n";  // index 0 in the fixture's registry
  auto clean = Run(false, {ost});
  ASSERT_TRUE(clean.ok()) << clean.status().ToString();
  for (const auto& p : clean->problems) ADD_FAILURE() << p.text;
  EXPECT_EQ(clean->objects_verified, 2u);

  // One bit flipped in chunk 2 of "bad" (bytes 8192..12287).
  std::string path = ondisk::ObjectPath(ost, oids[0]);
  int fd = open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t b = 0;
  ASSERT_EQ(pread(fd, &b, 1, 9000), 1);
  b ^= 0x10;
  ASSERT_EQ(pwrite(fd, &b, 1, 9000), 1);
  close(fd);
  for (bool repair : {false, true}) {
    auto r = Run(repair, {ost});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->problems.size(), 1u);
    const std::string& text = r->problems[0].text;
    EXPECT_NE(text.find("OST 0: oid " + std::to_string(oids[0]) + " offset 8192 "),
              std::string::npos)
        << text;
    EXPECT_FALSE(r->problems[0].repaired) << "fsck cannot know the right bytes";
  }
  EXPECT_TRUE(std::filesystem::exists(path)) << "a repair must not delete data";
}

TEST_F(FsckTest, AQueuedDestroyOfALiveObjectIsDropped) {
  auto s = Mkdir(kRootIno, "s");
  auto o = Create(s->ino(), "a");
  ASSERT_TRUE(o.ok());
  proto::DestroyRec rec;
  rec.set_ost(o->layout().objects(0).ost());
  rec.set_oid(o->layout().objects(0).oid());
  KvBatch b;
  b.Put(keys::Queue(424242), rec.SerializeAsString());
  ASSERT_TRUE(store_->Write(b, true).ok());
  ExpectFoundAndRepaired({"destroy record 424242"});
}

}  // namespace
}  // namespace sfs::mds

namespace sfs::mds {
namespace {

class FsckRedundancyTest : public FsckTest {
 protected:
  // /m/f, 2-way mirrored with one stripe; its second copy marked stale.
  void MakeDegradedFile() {
    auto m = Mkdir(kRootIno, "m");
    ASSERT_TRUE(m.ok());
    proto::SetLayoutReq set;
    set.set_ino(m->ino());
    set.mutable_layout()->set_mirror_count(2);
    set.mutable_layout()->set_stripe_count(1);
    set.mutable_layout()->set_start_ost(-1);
    ASSERT_TRUE(ns_->SetLayout(RootCtx(), set).ok());
    auto f = Create(m->ino(), "f");
    ASSERT_TRUE(f.ok());
    ino_ = f->attr().ino();
    ASSERT_TRUE(CloseFile(ino_, f->open_id()).ok());
    stale_.set_ino(ino_);
    *stale_.add_objects() = f->layout().objects(1);
    stale_.set_state(proto::OBJECT_STALE);
    proto::GetLayoutResp out;
    ASSERT_TRUE(ns_->MirrorState(RootCtx(), stale_, &out).ok());
  }
  std::string All(const fsck::Report& r) {
    std::string all;
    for (const auto& p : r.problems) all += p.text + (p.repaired ? " [repaired]\n" : "\n");
    return all;
  }
  uint64_t ino_ = 0;
  proto::MirrorStateReq stale_;
};

TEST_F(FsckRedundancyTest, AStaleCopyIsReportedUntilResyncedAndPutBackOnTheResyncList) {
  MakeDegradedFile();
  auto r = Run(false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->mirrored_files, 1u);
  EXPECT_EQ(r->degraded_files, 1u);
  ASSERT_EQ(r->problems.size(), 1u) << All(*r);
  EXPECT_NE(All(*r).find("1 stale copy of 2-way mirrored stripes: not fully redundant until "
                         "resynced (on the MDS's resync list)"),
            std::string::npos)
      << All(*r);
  // Its resync record lost: fsck puts it back, and the copy stays reported.
  DeleteKey(keys::Resync(ino_));
  r = Run(true);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u) << All(*r);
  EXPECT_TRUE(r->problems[0].repaired) << All(*r);
  EXPECT_NE(All(*r).find("not on the MDS's resync list"), std::string::npos) << All(*r);
  EXPECT_TRUE(store_->Get(keys::Resync(ino_)).ok()) << "the resync record was not put back";
  // Resynced (marked ok): fully redundant, and clean.
  stale_.set_state(proto::OBJECT_OK);
  proto::GetLayoutResp out;
  ASSERT_TRUE(ns_->MirrorState(RootCtx(), stale_, &out).ok());
  r = Run(false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->degraded_files, 0u);
  EXPECT_TRUE(r->clean()) << All(*r);
}

TEST_F(FsckRedundancyTest, ResyncRecordsOfMissingOrWholeFilesAreRemoved) {
  MakeDegradedFile();
  stale_.set_state(proto::OBJECT_OK);
  proto::GetLayoutResp out;
  ASSERT_TRUE(ns_->MirrorState(RootCtx(), stale_, &out).ok());
  KvBatch b;
  b.Put(keys::Resync(ino_), "");      // a whole file
  b.Put(keys::Resync(987654), "");    // no such inode
  ASSERT_TRUE(store_->Write(b, true).ok());
  ExpectFoundAndRepaired({"resync record for inode " + std::to_string(ino_) +
                              " which has no stale copy",
                          "resync record for missing inode 987654"});
}

TEST_F(FsckRedundancyTest, CopiesOfAStripeOnOneOstAreReported) {
  MakeDegradedFile();
  stale_.set_state(proto::OBJECT_OK);
  proto::GetLayoutResp out;
  ASSERT_TRUE(ns_->MirrorState(RootCtx(), stale_, &out).ok());
  PutInode(ino_, [](proto::InodeRec* rec) {
    rec->mutable_layout()->mutable_objects(1)->set_ost(rec->layout().objects(0).ost());
  });
  auto r = Run(true);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->problems.size(), 1u) << All(*r);
  EXPECT_FALSE(r->problems[0].repaired);
  EXPECT_NE(All(*r).find("copies of stripe 0 share an OST (1 OSTs for 2 copies)"),
            std::string::npos)
      << All(*r);
}

}  // namespace
}  // namespace sfs::mds
