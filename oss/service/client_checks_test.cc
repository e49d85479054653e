// OSS reads with client_checks over a real TCP server and channel: the reply
// bytes are the object's and the frame crc (folded from the stored chunk
// crcs, not computed over the bytes) holds for aligned and unaligned ranges,
// holes and ranges past the end; a byte rotted on disk in a middle chunk
// fails the channel's check (EBADMSG on that call only, the connection goes
// on), and the same read without client_checks is the OSS's EIO; a reply
// larger than the socket buffers (partial writes) arrives intact.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "common/rpc/rpc.h"
#include "oss.pb.h"
#include "oss/service/oss_service.h"
#include "oss/testing/random_bytes.h"
#include "oss/testing/store_fixture.h"
#include "oss/testing/temp_dir.h"

namespace sfs::oss {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Random(size_t n, uint32_t seed) { return RandomBytes(n, seed); }

class ClientChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenFileObjectStore(dir_.path() + "/ost0");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    service_.SetTargets({{0, store_.get()}});
    auto server = rpc::StartTcpServer(rpc::ServerOptions{}, &service_);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    io_ = rpc::IoContext::Create();
    channel_ = io_->MakeTcpChannel("127.0.0.1:" + std::to_string(server_->port()));
  }
  void TearDown() override {
    channel_.reset();
    server_->Stop();
  }
  void WriteOk(uint64_t oid, uint64_t off, const Bytes& data) {
    ASSERT_TRUE(store_->Write(oid, off, data, false).ok());
  }
  // A read through the server; the channel checks the frame crc.
  Status Read(uint64_t oid, uint64_t off, Bytes* out, bool client_checks,
              proto::OssResponse* resp = nullptr, uint32_t* bulk_len = nullptr) {
    proto::OssRequest req;
    req.set_ost(0);
    req.set_oid(oid);
    req.mutable_read()->set_offset(off);
    req.mutable_read()->set_length(out->size());
    req.mutable_read()->set_client_checks(client_checks);
    rpc::Response raw;
    SFS_RETURN_IF_ERROR(
        channel_->Call(rpc::kServiceOss, req.SerializeAsString(), {}, *out, &raw));
    proto::OssResponse r;
    if (!r.ParseFromString(raw.payload)) return Status(EBADMSG, "unparsable");
    if (resp != nullptr) *resp = r;
    if (bulk_len != nullptr) *bulk_len = raw.bulk_len;
    return Status(r.status().code(), r.status().message());
  }
  std::string ObjectPath(uint64_t oid) { return ObjectFile(dir_.path() + "/ost0", oid); }
  // Writes a small object and reads it once, so its pages are cached.
  void WriteCached(uint64_t oid, const Bytes& data) {
    WriteOk(oid, 0, data);
    Bytes b(data.size());
    ASSERT_TRUE(store_->Read(oid, 0, b).ok());
  }

  TempDir dir_;
  std::unique_ptr<ObjectStore> store_;
  OssService service_;
  std::unique_ptr<rpc::Server> server_;
  std::unique_ptr<rpc::IoContext> io_;
  std::unique_ptr<rpc::Channel> channel_;
};

TEST_F(ClientChecksTest, TheServerSendsTheObjectsBytesWithAFrameCrcThatHolds) {
  const Bytes data = Random(3 << 20, 1);
  WriteOk(5, 0, data);
  for (auto [off, len] : {std::pair<uint64_t, size_t>{0, 1 << 20},
                          {1 << 20, 1 << 20},
                          {47008, 12 * 47008},
                          {4097, 65536},
                          {(3 << 20) - 70000, 1 << 20}}) {  // across the end
    Bytes got(len, 0xEE);
    proto::OssResponse resp;
    Status st = Read(5, off, &got, true, &resp);
    ASSERT_TRUE(st.ok()) << "off " << off << " len " << len << ": " << st.ToString();
    const uint64_t exist = std::min<uint64_t>(len, data.size() > off ? data.size() - off : 0);
    EXPECT_EQ(resp.read_size(), exist) << off;
    Bytes want(len, 0);
    std::copy(data.begin() + off, data.begin() + off + exist, want.begin());
    EXPECT_TRUE(got == want) << "bytes differ at off " << off << " len " << len;
  }
}

// A reply far larger than the socket buffers goes out in many partial
// writes (the server's direct send, then its writer): the bytes and the crc
// folded from stored crcs still arrive intact, unaligned start included.
TEST_F(ClientChecksTest, AReplyLargerThanTheSocketBuffersArrivesIntact) {
  const Bytes data = Random(20 << 20, 9);
  WriteOk(9, 0, data);
  for (uint64_t off : {uint64_t{0}, uint64_t{12345}}) {
    Bytes got(16 << 20, 0xEE);
    Status st = Read(9, off, &got, true);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + off)) << off;
  }
}

TEST_F(ClientChecksTest, HolesAndRangesPastTheEndAreZerosUnderAGoodCrc) {
  const Bytes a = Random(100000, 2), b = Random(80000, 3);
  WriteOk(6, 0, a);
  WriteOk(6, 1 << 20, b);
  Bytes got(1 << 20, 0xEE);
  ASSERT_TRUE(Read(6, 50001, &got, true).ok());
  Bytes want(1 << 20, 0);
  std::copy(a.begin() + 50001, a.end(), want.begin());
  std::copy(b.begin(), b.begin() + (50001 + (1 << 20) - (1 << 20)), want.begin() + ((1 << 20) - 50001));
  EXPECT_TRUE(got == want);
  Bytes past(256 * 1024, 0xEE);
  proto::OssResponse resp;
  ASSERT_TRUE(Read(6, 8 << 20, &past, true, &resp).ok());
  EXPECT_EQ(resp.read_size(), 0u);
  EXPECT_TRUE(past == Bytes(256 * 1024, 0));
}

TEST_F(ClientChecksTest, ARottedByteFailsTheFrameCheckThenTheVerifiedReadIsEio) {
  WriteOk(7, 0, Random(1 << 20, 4));
  int fd = ::open(ObjectPath(7).c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t byte = 0;
  ASSERT_EQ(::pread(fd, &byte, 1, 600000), 1);
  byte ^= 0x01;
  ASSERT_EQ(::pwrite(fd, &byte, 1, 600000), 1);
  ::close(fd);
  Bytes got(1 << 20);
  Status st = Read(7, 0, &got, true);
  EXPECT_EQ(st.code(), EBADMSG) << "the rotted byte must not pass: " << st.ToString();
  EXPECT_EQ(Read(7, 0, &got, false).code(), EIO) << "the OSS's own check names the chunk";
  Bytes other(128 * 1024);
  WriteOk(8, 0, Random(128 * 1024, 5));
  EXPECT_TRUE(Read(8, 0, &other, true).ok()) << "the connection serves the next call";
}

// A small object in the page cache goes out from its file by sendfile: the
// reply carries just its bytes (the rest of the read is zeros by the
// protocol), under the stored crcs' value; the verified read still sends the
// whole length from a buffer.
TEST_F(ClientChecksTest, ASmallCachedObjectIsSentFromItsFileWithJustItsBytes) {
  const Bytes data = Random(110 * 1024 + 123, 6);
  WriteCached(9, data);
  for (uint64_t off : {0ul, 4095ul, 40000ul}) {
    Bytes got(256 * 1024, 0xEE);
    proto::OssResponse resp;
    uint32_t bulk_len = 0;
    ASSERT_TRUE(Read(9, off, &got, true, &resp, &bulk_len).ok()) << off;
    EXPECT_EQ(resp.read_size(), data.size() - off);
    EXPECT_EQ(bulk_len, data.size() - off) << "sent from the file: only the bytes that exist";
    // The channel fills only what came; libsfs zero-fills the rest (io.cc).
    EXPECT_TRUE(std::equal(data.begin() + off, data.end(), got.begin())) << off;
  }
  Bytes got(256 * 1024);
  uint32_t bulk_len = 0;
  ASSERT_TRUE(Read(9, 0, &got, false, nullptr, &bulk_len).ok());
  EXPECT_EQ(bulk_len, got.size()) << "verified by the OSS, from a buffer";
}

TEST_F(ClientChecksTest, ARottedByteOfASmallCachedObjectFailsTheFrameCheck) {
  WriteCached(10, Random(200 * 1024, 7));
  int fd = ::open(ObjectPath(10).c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  uint8_t byte = 0;
  ASSERT_EQ(::pread(fd, &byte, 1, 100000), 1);
  byte ^= 0x01;
  ASSERT_EQ(::pwrite(fd, &byte, 1, 100000), 1);  // through the page cache: still cached
  ::close(fd);
  Bytes got(200 * 1024);
  EXPECT_EQ(Read(10, 0, &got, true).code(), EBADMSG);
  EXPECT_EQ(Read(10, 0, &got, false).code(), EIO);
}

}  // namespace
}  // namespace sfs::oss
