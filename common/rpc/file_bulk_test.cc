// Reply::file_bulk over TCP: a reply's bulk sent from a file by sendfile
// arrives byte-exact (larger than the socket buffers, from workers and from
// the I/O thread, between replies from memory on one connection); a crc that
// does not match the file's bytes fails that call alone (EBADMSG), and so
// does a file shorter than its frame (padded with zeros); a descriptor with an
// owner is not closed by the bulk.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "common/rpc/rpc.h"

namespace sfs::rpc {
namespace {

std::vector<uint8_t> Pattern(uint32_t seed, size_t n) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// An unlinked temporary file holding bytes; its fd.
int TempFileWith(const std::vector<uint8_t>& bytes) {
  char name[] = "/tmp/sfs-file-bulk-XXXXXX";
  int fd = ::mkstemp(name);
  if (fd < 0) return -1;
  ::unlink(name);
  if (::pwrite(fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Payload "file <n> <seed> [badcrc|short] [inline]": Pattern(seed, n) sent
// from a file (its crc wrong, or the file 1 KiB short of n, if asked); "mem
// <n> <seed>": the same bytes from memory. Replies "re:" + payload.
class FileHandler : public Handler {
 public:
  void Handle(Request& req, Reply* reply) override { Answer(req, reply); }
  bool TryHandleInline(Request& req, ReplyFn& done) override {
    if (req.payload.find("inline") == std::string::npos) return false;
    Reply reply;
    Answer(req, &reply);
    done(std::move(reply));
    return true;
  }

 private:
  static void Answer(const Request& req, Reply* reply) {
    char kind[8] = {};
    size_t n = 0;
    unsigned seed = 0;
    std::sscanf(req.payload.c_str(), "%7s %zu %u", kind, &n, &seed);
    std::vector<uint8_t> bytes = Pattern(seed, n);
    reply->payload = "re:" + req.payload;
    if (std::string(kind) == "mem" || !req.file_bulk_ok) {
      reply->bulk = std::move(bytes);
      return;
    }
    uint32_t crc = crc32c::Value(bytes.data(), bytes.size());
    if (req.payload.find("badcrc") != std::string::npos) crc ^= 1;
    if (req.payload.find("short") != std::string::npos) bytes.resize(n - 1024);
    int fd = TempFileWith(bytes);
    if (fd < 0) return;  // no bulk: the test's length check fails
    reply->file_bulk = std::make_shared<FileBulk>(fd, 0, static_cast<uint32_t>(n), crc);
  }
};

class FileBulkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions opts;
    opts.io_threads = 1;
    auto s = StartTcpServer(opts, &handler_);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    io_ = IoContext::Create(1);
    chan_ = io_->MakeTcpChannel("127.0.0.1:" + std::to_string(server_->port()));
  }
  void TearDown() override {
    chan_.reset();
    io_.reset();
    if (server_) server_->Stop();
  }
  FileHandler handler_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<IoContext> io_;
  std::unique_ptr<Channel> chan_;
};

TEST_F(FileBulkTest, FileRepliesLargerThanTheSocketArriveWholeAmongRepliesFromMemory) {
  // 24 calls in flight on one connection: 4 MiB files (more than the socket
  // takes at once, so the writer waits for room mid-file) from workers and
  // from the I/O thread, between small replies from memory.
  std::vector<std::string> payloads;
  std::vector<size_t> sizes;
  for (int i = 0; i < 24; ++i) {
    size_t n = i % 3 == 2 ? 3000 + i : (4u << 20) + 4096 * i;
    const char* kind = i % 3 == 2 ? "mem" : "file";
    payloads.push_back(std::string(kind) + " " + std::to_string(n) + " " + std::to_string(i) +
                       (i % 2 == 0 ? " inline" : ""));
    sizes.push_back(n);
  }
  std::vector<std::vector<uint8_t>> ins;
  for (size_t n : sizes) ins.emplace_back(n, 0);
  std::vector<std::shared_ptr<PendingCall>> calls;
  for (size_t i = 0; i < payloads.size(); ++i) {
    calls.push_back(chan_->Start(kServiceOss, payloads[i], {}, ins[i], {}));
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    Response r;
    Status st = chan_->Wait(calls[i], &r);
    ASSERT_TRUE(st.ok()) << i << ": " << st.ToString();
    EXPECT_EQ(r.payload, "re:" + payloads[i]);
    ASSERT_EQ(r.bulk_len, sizes[i]);
    EXPECT_TRUE(ins[i] == Pattern(static_cast<uint32_t>(i), sizes[i])) << "reply " << i;
  }
}

TEST_F(FileBulkTest, AWrongCrcFailsOnlyThatCallAndTheConnectionServesOn) {
  std::vector<uint8_t> in(1 << 20);
  Response r;
  for (const char* where : {"", " inline"}) {
    Status st = chan_->Call(kServiceOss, std::string("file 1048576 7 badcrc") + where, {}, in, &r);
    EXPECT_EQ(st.code(), EBADMSG) << where << ": " << st.ToString();
    st = chan_->Call(kServiceOss, std::string("file 1048576 8") + where, {}, in, &r);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_FALSE(r.resent) << "the same connection";
    EXPECT_TRUE(in == Pattern(8, 1 << 20));
  }
}

// A file truncated since the handler vouched for it (an OSS object under a
// racing truncate): the frame is finished with zeros, which fail that call's
// crc check alone (EBADMSG: a reader of objects asks again, verified), and
// the connection serves on.
TEST_F(FileBulkTest, AFileShorterThanItsFrameFailsThatCallAloneAndTheConnectionServesOn) {
  std::vector<uint8_t> in(256 << 10);
  Response r;
  for (const char* where : {"", " inline"}) {
    Status st = chan_->Call(kServiceOss, std::string("file 262144 3 short") + where, {}, in, &r);
    EXPECT_EQ(st.code(), EBADMSG) << where << ": " << st.ToString();
    st = chan_->Call(kServiceOss, std::string("file 262144 4") + where, {}, in, &r);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_FALSE(r.resent) << "the same connection";
    EXPECT_TRUE(in == Pattern(4, 256 << 10));
  }
}

TEST(FileBulkOwnerTest, AnOwnedDescriptorIsLeftToItsOwner) {
  int fd = TempFileWith(Pattern(1, 10));
  ASSERT_GE(fd, 0);
  auto owner = std::make_shared<int>(fd);
  { FileBulk bulk(fd, 0, 10, 0, owner); }
  EXPECT_NE(::fcntl(fd, F_GETFD), -1) << "its owner closes it";
  { FileBulk bulk(fd, 0, 10, 0); }
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1) << "an unowned one closes with the bulk";
}

}  // namespace
}  // namespace sfs::rpc
