// Unit tests of the vectored write (OssRequest.write_v) through
// OssService::Handle, with real checksummed stores on a temp dir: every
// extent lands where it says and in order, the crc sidecar stays right
// (also when the frame's piece crcs are handed down), and each extent gets
// the status its own `write` would have got (ESTALE on a destroyed object,
// ENOSPC on a full disk) without failing the others.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/rpc/bulk_crc.h"
#include "oss.pb.h"
#include "oss/service/oss_service.h"
#include "oss/testing/fault_env.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using Bytes = std::vector<uint8_t>;
using proto::OssRequest;
using proto::OssResponse;

struct Ext {
  uint64_t oid;
  uint64_t off;
  Bytes data;
  uint32_t skip = 0;  // padding bytes (0xee) before data in the bulk
};

Bytes Random(size_t n, std::mt19937& rng) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

class WriteVTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FileStoreOptions opts;
    opts.env = &env_;  // checksums on (the default)
    auto s = OpenFileObjectStore(dir_.path() + "/ost0", opts);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    service_.SetTargets({{5, store_.get()}});
  }

  // One write_v of exts; with_pieces hands the bulk's 4 KiB piece crcs down
  // as the TCP server does.
  OssResponse WriteV(const std::vector<Ext>& exts, bool with_pieces = true, bool sync = false) {
    OssRequest req;
    req.set_ost(5);
    req.mutable_write_v()->set_sync(sync);
    rpc::Request r;
    r.service = rpc::kServiceOss;
    for (const Ext& e : exts) {
      proto::ObjExtent* x = req.mutable_write_v()->add_extents();
      x->set_oid(e.oid);
      x->set_offset(e.off);
      x->set_length(e.data.size());
      x->set_skip(e.skip);
      r.bulk.insert(r.bulk.end(), e.skip, 0xee);
      r.bulk.insert(r.bulk.end(), e.data.begin(), e.data.end());
    }
    if (with_pieces) r.bulk_piece_crcs = rpc::PieceCrcs(r.bulk);
    req.SerializeToString(&r.payload);
    return Call(r);
  }

  OssResponse Call(rpc::Request& r) {
    rpc::Reply reply;
    service_.Handle(r, &reply);
    OssResponse resp;
    EXPECT_TRUE(resp.ParseFromString(reply.payload));
    return resp;
  }

  // The object's bytes [0, len), checked against its sidecar by the store.
  Bytes ReadBack(uint64_t oid, size_t len) {
    Bytes b(len);
    Result<uint64_t> got = store_->Read(oid, 0, b);
    EXPECT_TRUE(got.ok()) << got.status().ToString();
    return b;
  }

  static std::vector<int> Codes(const OssResponse& resp) {
    std::vector<int> out;
    for (const auto& st : resp.write_status()) out.push_back(st.code());
    return out;
  }

  TempDir dir_;
  FaultEnv env_;
  std::unique_ptr<ObjectStore> store_;
  OssService service_;
};

TEST_F(WriteVTest, ManyExtentsToSeveralObjectsEachLandWhereTheySayAndVerify) {
  std::mt19937 rng(7);
  std::map<uint64_t, Bytes> model;
  std::vector<Ext> exts;
  for (int i = 0; i < 300; ++i) {
    // Aligned 4 KiB writes (the pieces' crcs are used) and unaligned ones mixed.
    const bool aligned = i % 3 != 0;
    const uint64_t oid = 100 + rng() % 3;
    const uint64_t off = aligned ? (rng() % 64) * 4096 : rng() % (256 << 10);
    const size_t len = aligned ? 4096 : 1 + rng() % 20000;
    exts.push_back({oid, off, Random(len, rng)});
  }
  for (const Ext& e : exts) {
    Bytes& m = model[e.oid];
    if (m.size() < e.off + e.data.size()) m.resize(e.off + e.data.size());
    std::copy(e.data.begin(), e.data.end(), m.begin() + static_cast<ptrdiff_t>(e.off));
  }
  OssResponse resp = WriteV(exts);
  ASSERT_EQ(resp.status().code(), 0) << resp.status().message();
  EXPECT_EQ(Codes(resp), std::vector<int>(exts.size(), 0));
  for (const auto& [oid, bytes] : model) EXPECT_EQ(ReadBack(oid, bytes.size()), bytes) << oid;
}

TEST_F(WriteVTest, OverlappingExtentsApplyInOrderSoTheLaterOneWins) {
  std::vector<Ext> exts = {{1, 0, Bytes(8192, 'a')},
                           {1, 4096, Bytes(4096, 'b')},
                           {1, 100, Bytes(10, 'c')},
                           {1, 0, Bytes(50, 'd')}};
  OssResponse resp = WriteV(exts);
  ASSERT_EQ(resp.status().code(), 0);
  Bytes want(8192, 'a');
  std::fill(want.begin() + 4096, want.end(), 'b');
  std::fill(want.begin() + 100, want.begin() + 110, 'c');
  std::fill(want.begin(), want.begin() + 50, 'd');
  EXPECT_EQ(ReadBack(1, 8192), want);
}

TEST_F(WriteVTest, WithoutPieceCrcsAndWithSyncTheDataAndSidecarAreTheSame) {
  std::mt19937 rng(3);
  Bytes a = Random(3 * 4096, rng), b = Random(5000, rng);
  OssResponse resp = WriteV({{2, 0, a}, {3, 777, b}}, /*with_pieces=*/false, /*sync=*/true);
  ASSERT_EQ(resp.status().code(), 0);
  EXPECT_EQ(Codes(resp), (std::vector<int>{0, 0}));
  EXPECT_EQ(ReadBack(2, a.size()), a);
  Bytes got = ReadBack(3, 777 + b.size());
  EXPECT_EQ(Bytes(got.begin() + 777, got.end()), b);
}

// Padding lines a large extent up with the object's pages (the client's way
// to let the OSS write it O_DIRECT); the skipped bytes are never written.
TEST_F(WriteVTest, SkippedPaddingIsNotWrittenAndPaddedExtentsLandInPlace) {
  std::mt19937 rng(11);
  Bytes big = Random(200 * 1024, rng), small = Random(300, rng);
  const uint64_t off = 3 * 4096 + 100;
  OssResponse resp = WriteV({{40, off, big, 100}, {40, 0, small, 7}, {41, 5, small, 4095}});
  ASSERT_EQ(resp.status().code(), 0) << resp.status().message();
  EXPECT_EQ(Codes(resp), (std::vector<int>{0, 0, 0}));
  Bytes want(off + big.size(), 0);
  std::copy(big.begin(), big.end(), want.begin() + off);
  std::copy(small.begin(), small.end(), want.begin());
  EXPECT_EQ(ReadBack(40, want.size()), want);
  Bytes want41(5, 0);
  want41.insert(want41.end(), small.begin(), small.end());
  EXPECT_EQ(ReadBack(41, want41.size()), want41);
  EXPECT_EQ(WriteV({{42, 0, small, 4096}}).status().code(), EINVAL) << "skip of a whole page";
}

// With the bulk's pages lined up with the object's (padding), the store takes
// whole chunks' crcs from the bulk's piece crcs; a read verifies every chunk
// (a crc taken from the wrong piece would fail it with EIO).
TEST_F(WriteVTest, PaddedUnalignedExtentsTakeTheirChunkCrcsFromTheBulkAndVerify) {
  std::mt19937 rng(5);
  std::map<uint64_t, Bytes> model;
  std::vector<Ext> exts;
  uint64_t bulk = 0;
  for (int i = 0; i < 40; ++i) {
    const uint64_t oid = 60 + i % 2, off = rng() % (512 << 10);
    Bytes data = Random(4096 + rng() % 40000, rng);
    const uint32_t skip = static_cast<uint32_t>((off + 4096 - bulk % 4096) % 4096);
    bulk += skip + data.size();
    Bytes& m = model[oid];
    if (m.size() < off + data.size()) m.resize(off + data.size());
    std::copy(data.begin(), data.end(), m.begin() + static_cast<ptrdiff_t>(off));
    exts.push_back({oid, off, std::move(data), skip});
  }
  OssResponse resp = WriteV(exts);
  ASSERT_EQ(resp.status().code(), 0) << resp.status().message();
  EXPECT_EQ(Codes(resp), std::vector<int>(exts.size(), 0));
  for (const auto& [oid, bytes] : model) EXPECT_EQ(ReadBack(oid, bytes.size()), bytes) << oid;
}

// A plain write's bulk pieces are the object's chunks only at an aligned
// offset: at an unaligned one they are not used.
TEST_F(WriteVTest, APlainUnalignedWriteWithBulkPieceCrcsStillVerifies) {
  std::mt19937 rng(9);
  Bytes data = Random(3 * 4096 + 3996, rng);  // chunks 0..3, 1 and 2 whole
  OssRequest req;
  req.set_ost(5);
  req.set_oid(70);
  req.mutable_write()->set_offset(100);
  rpc::Request r;
  r.service = rpc::kServiceOss;
  r.bulk = data;
  r.bulk_piece_crcs = rpc::PieceCrcs(r.bulk);
  req.SerializeToString(&r.payload);
  ASSERT_EQ(Call(r).status().code(), 0);
  Bytes got = ReadBack(70, 100 + data.size());
  EXPECT_EQ(Bytes(got.begin() + 100, got.end()), data);
}

TEST_F(WriteVTest, AnExtentOnADestroyedObjectIsEstaleAndTheOthersLand) {
  ASSERT_TRUE(store_->Write(9, 0, Bytes(10, 1), false).ok());
  ASSERT_TRUE(store_->Destroy(9).ok());
  OssResponse resp = WriteV({{8, 0, Bytes(10, 'x')}, {9, 0, Bytes(10, 'y')}, {8, 10, Bytes(5, 'z')}});
  ASSERT_EQ(resp.status().code(), 0) << "the call itself succeeds";
  EXPECT_EQ(Codes(resp), (std::vector<int>{0, ESTALE, 0}));
  EXPECT_FALSE(resp.object_destroyed()) << "only the extent's status says so";
  Bytes want(10, 'x');
  want.insert(want.end(), 5, 'z');
  EXPECT_EQ(ReadBack(8, 15), want);
  EXPECT_EQ(store_->Stat(9).status().code(), ESTALE) << "not re-created";
}

TEST_F(WriteVTest, ADiskFullFailsOnlyTheExtentsThatNeedNewSpace) {
  ASSERT_TRUE(store_->Write(20, 0, Bytes(8192, 1), false).ok());
  env_.set_write_budget(0);  // no byte past any file's end
  OssResponse resp =
      WriteV({{20, 0, Bytes(4096, 2)}, {21, 0, Bytes(4096, 3)}, {20, 4096, Bytes(100, 4)}});
  ASSERT_EQ(resp.status().code(), 0);
  EXPECT_EQ(Codes(resp), (std::vector<int>{0, ENOSPC, 0}));
  env_.Heal();
  Bytes want(8192, 1);
  std::fill(want.begin(), want.begin() + 4096, 2);
  std::fill(want.begin() + 4096, want.begin() + 4196, 4);
  EXPECT_EQ(ReadBack(20, 8192), want);
}

TEST_F(WriteVTest, MalformedExtentListsAreEinvalAndWriteNothing) {
  OssResponse none = WriteV({});
  EXPECT_EQ(none.status().code(), EINVAL);
  OssResponse empty = WriteV({{30, 0, Bytes(10, 1)}, {30, 10, Bytes()}});
  EXPECT_EQ(empty.status().code(), EINVAL);
  EXPECT_EQ(empty.write_status_size(), 0);

  OssRequest req;  // lengths that add up to more than the bulk
  req.set_ost(5);
  proto::ObjExtent* x = req.mutable_write_v()->add_extents();
  x->set_oid(30);
  x->set_length(11);
  rpc::Request r;
  r.service = rpc::kServiceOss;
  r.bulk = Bytes(10, 1);
  req.SerializeToString(&r.payload);
  EXPECT_EQ(Call(r).status().code(), EINVAL);

  std::vector<Ext> many(OssService::kMaxWriteV + 1, Ext{30, 0, Bytes(1, 1)});
  EXPECT_EQ(WriteV(many).status().code(), EINVAL);
  EXPECT_FALSE(store_->Stat(30)->exists) << "nothing written";
}

TEST_F(WriteVTest, AnUnknownOstFailsTheWholeCallWithEstaleNotMarkedDestroyed) {
  service_.SetTargets({});
  OssResponse resp = WriteV({{1, 0, Bytes(10, 1)}});
  EXPECT_EQ(resp.status().code(), ESTALE);
  EXPECT_FALSE(resp.object_destroyed());
  EXPECT_EQ(resp.write_status_size(), 0);
}

}  // namespace
}  // namespace sfs::oss
