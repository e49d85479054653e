// wire_flags: the INIT and OPEN/CREATE patching on byte buffers laid out as
// the kernel and libfuse 3.14 lay them out, and the hooks driven over pipes
// in place of /dev/fuse (no kernel involved).
#include "client/fuse/wire_flags.h"

#include <linux/fuse.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace sfs::fuse {
namespace {

constexpr uint32_t kMmapBitInFlags2 = 1u << 4;  // bit 36 of the 64-bit flags

// A request as read from /dev/fuse: header then argument.
template <typename Arg>
std::vector<uint8_t> Request(uint32_t opcode, uint64_t unique, const Arg& arg, size_t arg_len) {
  fuse_in_header in{};
  in.opcode = opcode;
  in.unique = unique;
  in.len = static_cast<uint32_t>(sizeof(in) + arg_len);
  std::vector<uint8_t> buf(in.len);
  std::memcpy(buf.data(), &in, sizeof(in));
  std::memcpy(buf.data() + sizeof(in), &arg, arg_len);
  return buf;
}

// A kernel INIT request of minor `minor` offering `flags` and, with
// FUSE_INIT_EXT among them, `flags2`.
std::vector<uint8_t> InitRequest(uint32_t minor, uint32_t flags, uint32_t flags2,
                                 uint64_t unique = 2) {
  fuse_init_in init{};
  init.major = 7;
  init.minor = minor;
  init.flags = flags;
  init.flags2 = flags2;
  return Request(FUSE_INIT, unique, init, sizeof(init));
}

// A reply as libfuse sends it: iov[0] the header, iov[1] the argument.
struct Reply {
  fuse_out_header out{};
  std::vector<uint8_t> arg;
  iovec iov[2] = {};

  Reply(uint64_t unique, std::vector<uint8_t> a, int32_t error = 0) : arg(std::move(a)) {
    out.unique = unique;
    out.error = error;
    out.len = static_cast<uint32_t>(sizeof(out) + arg.size());
    iov[0] = {&out, sizeof(out)};
    iov[1] = {arg.data(), arg.size()};
  }
  template <typename T>
  T At(size_t offset) const {
    T v;
    std::memcpy(&v, arg.data() + offset, sizeof(v));
    return v;
  }
};

template <typename T>
std::vector<uint8_t> Bytes(const T& v, size_t len = sizeof(T)) {
  std::vector<uint8_t> b(len);
  std::memcpy(b.data(), &v, len);
  return b;
}

// libfuse 3.14's INIT reply to a minor >= 23 kernel: all of fuse_init_out.
Reply InitReply(uint64_t unique, uint32_t flags, size_t len = sizeof(fuse_init_out)) {
  fuse_init_out o{};
  o.major = 7;
  o.minor = 38;
  o.flags = flags;
  o.max_write = 1 << 20;
  o.time_gran = 1;
  return Reply(unique, Bytes(o, len));
}

Reply OpenReply(uint64_t unique, uint32_t opcode, uint32_t open_flags, int32_t error = 0) {
  fuse_open_out open{};
  open.fh = 42;
  open.open_flags = open_flags;
  std::vector<uint8_t> arg;
  if (opcode == FUSE_CREATE) {
    fuse_entry_out entry{};
    entry.nodeid = 7;
    arg = Bytes(entry);
  }
  std::vector<uint8_t> o = Bytes(open);
  arg.insert(arg.end(), o.begin(), o.end());
  return Reply(unique, std::move(arg), error);
}

uint32_t OpenFlags(const Reply& r, uint32_t opcode) {
  size_t at = (opcode == FUSE_CREATE ? sizeof(fuse_entry_out) : 0) +
              offsetof(fuse_open_out, open_flags);
  return r.At<uint32_t>(at);
}

TEST(WireFlagsTest, MaxPagesIsSetOnlyInAnInitReplyThatHasFuseMaxPages) {
  Reply r = InitReply(2, FUSE_ASYNC_READ | FUSE_MAX_PAGES);
  ASSERT_TRUE(SetInitMaxPages(r.iov, 2, 1024));
  EXPECT_EQ(r.At<uint16_t>(offsetof(fuse_init_out, max_pages)), 1024u);
  EXPECT_EQ(r.At<uint32_t>(offsetof(fuse_init_out, max_write)), 1u << 20);
  EXPECT_EQ(r.At<uint32_t>(offsetof(fuse_init_out, flags)), FUSE_ASYNC_READ | FUSE_MAX_PAGES);
  Reply without = InitReply(3, FUSE_ASYNC_READ);  // the kernel did not offer it
  EXPECT_FALSE(SetInitMaxPages(without.iov, 2, 1024));
  EXPECT_EQ(without.At<uint16_t>(offsetof(fuse_init_out, max_pages)), 0u);
  Reply old = InitReply(4, FUSE_MAX_PAGES, offsetof(fuse_init_out, max_pages));  // too short
  EXPECT_FALSE(SetInitMaxPages(old.iov, 2, 1024));
}

TEST(WireFlagsTest, AnExtendedInitRequestYieldsItsFlags2AsTheHighHalf) {
  std::vector<uint8_t> req = InitRequest(44, FUSE_INIT_EXT | FUSE_ASYNC_READ, kMmapBitInFlags2);
  auto k = ParseInitRequest(req.data(), req.size());
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->major, 7u);
  EXPECT_EQ(k->minor, 44u);
  EXPECT_EQ(k->flags, kDirectIoAllowMmap | FUSE_INIT_EXT | FUSE_ASYNC_READ);
}

TEST(WireFlagsTest, Flags2CountsOnlyWithInitExtAndOldShortRequestsParse) {
  std::vector<uint8_t> no_ext = InitRequest(44, FUSE_ASYNC_READ, kMmapBitInFlags2);
  EXPECT_EQ(ParseInitRequest(no_ext.data(), no_ext.size())->flags, FUSE_ASYNC_READ);
  // A 7.35 kernel's fuse_init_in ends after flags.
  fuse_init_in old{};
  old.major = 7;
  old.minor = 35;
  old.flags = FUSE_ASYNC_READ;
  std::vector<uint8_t> short_req = Request(FUSE_INIT, 2, old, offsetof(fuse_init_in, flags2));
  auto k = ParseInitRequest(short_req.data(), short_req.size());
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->minor, 35u);
  EXPECT_EQ(k->flags, FUSE_ASYNC_READ);
  std::vector<uint8_t> open = Request(FUSE_OPEN, 4, fuse_open_in{}, sizeof(fuse_open_in));
  EXPECT_FALSE(ParseInitRequest(open.data(), open.size()).has_value());
  EXPECT_FALSE(ParseInitRequest(no_ext.data(), no_ext.size() - 1).has_value()) << "len mismatch";
}

TEST(WireFlagsTest, TheInitReplyGetsInitExtAndTheMmapBitAndKeepsEverythingElse) {
  Reply r = InitReply(2, FUSE_ASYNC_READ | FUSE_BIG_WRITES);
  ASSERT_TRUE(AddInitFlags(r.iov, 2, kDirectIoAllowMmap));
  EXPECT_EQ(r.At<uint32_t>(offsetof(fuse_init_out, flags)),
            FUSE_ASYNC_READ | FUSE_BIG_WRITES | FUSE_INIT_EXT);
  EXPECT_EQ(r.At<uint32_t>(offsetof(fuse_init_out, flags2)), kMmapBitInFlags2);
  EXPECT_EQ(r.At<uint32_t>(offsetof(fuse_init_out, max_write)), 1u << 20);
  EXPECT_EQ(r.At<uint32_t>(offsetof(fuse_init_out, minor)), 38u);
  EXPECT_EQ(r.out.len, sizeof(fuse_out_header) + sizeof(fuse_init_out)) << "length unchanged";
}

TEST(WireFlagsTest, AShortOrFailedInitReplyIsLeftAlone) {
  // What libfuse sends a kernel older than 7.23: 24 bytes, no flags2.
  Reply compat = InitReply(2, FUSE_ASYNC_READ, 24);
  std::vector<uint8_t> before = compat.arg;
  EXPECT_FALSE(AddInitFlags(compat.iov, 2, kDirectIoAllowMmap));
  EXPECT_EQ(compat.arg, before);
  Reply error(2, {}, -EPROTO);
  EXPECT_FALSE(AddInitFlags(error.iov, 2, kDirectIoAllowMmap));
  Reply one_iov = InitReply(2, 0);
  EXPECT_FALSE(AddInitFlags(one_iov.iov, 1, kDirectIoAllowMmap));
}

TEST(WireFlagsTest, ADirectIoOpenOrCreateReplyGetsParallelWritesInItsOpenPartOnly) {
  Reply open = OpenReply(9, FUSE_OPEN, FOPEN_DIRECT_IO);
  EXPECT_TRUE(AddParallelIfDirect(open.iov, 2, FUSE_OPEN));
  EXPECT_EQ(OpenFlags(open, FUSE_OPEN), FOPEN_DIRECT_IO | FOPEN_PARALLEL_DIRECT_WRITES);
  EXPECT_EQ(open.At<uint64_t>(offsetof(fuse_open_out, fh)), 42u);
  Reply create = OpenReply(9, FUSE_CREATE, FOPEN_DIRECT_IO | FOPEN_KEEP_CACHE);
  EXPECT_TRUE(AddParallelIfDirect(create.iov, 2, FUSE_CREATE));
  EXPECT_EQ(OpenFlags(create, FUSE_CREATE),
            FOPEN_DIRECT_IO | FOPEN_KEEP_CACHE | FOPEN_PARALLEL_DIRECT_WRITES);
  EXPECT_EQ(create.At<uint64_t>(offsetof(fuse_entry_out, nodeid)), 7u);
}

TEST(WireFlagsTest, PageCacheOpensErrorsAndOtherShapesGetNoParallelWrites) {
  Reply cached = OpenReply(9, FUSE_OPEN, FOPEN_KEEP_CACHE);
  EXPECT_FALSE(AddParallelIfDirect(cached.iov, 2, FUSE_OPEN));
  EXPECT_EQ(OpenFlags(cached, FUSE_OPEN), FOPEN_KEEP_CACHE);
  Reply error = OpenReply(9, FUSE_OPEN, FOPEN_DIRECT_IO, -ENOENT);
  EXPECT_FALSE(AddParallelIfDirect(error.iov, 2, FUSE_OPEN));
  Reply open = OpenReply(9, FUSE_OPEN, FOPEN_DIRECT_IO);
  EXPECT_FALSE(AddParallelIfDirect(open.iov, 2, FUSE_CREATE)) << "too short for a CREATE";
  EXPECT_FALSE(AddParallelIfDirect(open.iov, 1, FUSE_OPEN));
  EXPECT_FALSE(AddParallelIfDirect(open.iov, 2, FUSE_READ));
  EXPECT_EQ(OpenFlags(open, FUSE_OPEN), FOPEN_DIRECT_IO);
}

// The hooks over pipes: what the kernel would read from OnWritev.
class WireFlagsHooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe(to_us_), 0);
    ASSERT_EQ(pipe(to_kernel_), 0);
  }
  void TearDown() override {
    for (int fd : {to_us_[0], to_us_[1], to_kernel_[0], to_kernel_[1]}) close(fd);
  }
  // The kernel sends req; the hook reads it.
  void Send(const std::vector<uint8_t>& req) {
    ASSERT_EQ(write(to_us_[1], req.data(), req.size()), static_cast<ssize_t>(req.size()));
    std::vector<uint8_t> buf(1 << 16);
    ASSERT_EQ(wire_.OnRead(to_us_[0], buf.data(), buf.size()), static_cast<ssize_t>(req.size()));
  }
  // libfuse replies r through the hook; returns the argument the kernel gets.
  std::vector<uint8_t> Answer(Reply& r) {
    ssize_t len = static_cast<ssize_t>(r.out.len);
    EXPECT_EQ(wire_.OnWritev(to_kernel_[1], r.iov, 2), len);
    std::vector<uint8_t> got(r.out.len);
    EXPECT_EQ(read(to_kernel_[0], got.data(), got.size()), len);
    return std::vector<uint8_t>(got.begin() + sizeof(fuse_out_header), got.end());
  }

  WireFlags wire_;
  int to_us_[2] = {-1, -1};
  int to_kernel_[2] = {-1, -1};
};

TEST_F(WireFlagsHooksTest, AModernKernelGetsBothFlagsAndOtherRepliesPassUntouched) {
  EXPECT_FALSE(wire_.DirectIoMmapAllowed());
  Send(InitRequest(44, FUSE_INIT_EXT | FUSE_ASYNC_READ, kMmapBitInFlags2, 2));
  Reply init = InitReply(2, FUSE_ASYNC_READ | FUSE_INIT_EXT);
  std::vector<uint8_t> sent = Answer(init);
  fuse_init_out o;
  std::memcpy(&o, sent.data(), sizeof(o));
  EXPECT_EQ(o.flags2 & kMmapBitInFlags2, kMmapBitInFlags2);
  EXPECT_TRUE(wire_.DirectIoMmapAllowed());
  EXPECT_TRUE(wire_.ParallelDirectWrites());
  EXPECT_EQ(wire_.KernelMinor(), 44u);
  EXPECT_NE(wire_.Summary().find("ALLOW_MMAP accepted"), std::string::npos) << wire_.Summary();

  Send(Request(FUSE_CREATE, 4, fuse_create_in{}, sizeof(fuse_create_in)));
  Reply create = OpenReply(4, FUSE_CREATE, FOPEN_DIRECT_IO);
  EXPECT_EQ(OpenFlags(Reply(4, Answer(create)), FUSE_CREATE),
            FOPEN_DIRECT_IO | FOPEN_PARALLEL_DIRECT_WRITES);
  // A reply of the same shape to a request that is not an open (e.g. a
  // READ of 16 bytes) is sent as it came.
  Reply read_reply = OpenReply(6, FUSE_OPEN, FOPEN_DIRECT_IO);
  std::vector<uint8_t> data = read_reply.arg;
  EXPECT_EQ(Answer(read_reply), data);
}

TEST_F(WireFlagsHooksTest, AKernelThatOffersNeitherGetsNeither) {
  Send(InitRequest(37, FUSE_INIT_EXT | FUSE_ASYNC_READ, 0, 2));
  Reply init = InitReply(2, FUSE_ASYNC_READ | FUSE_INIT_EXT);
  std::vector<uint8_t> before = init.arg;
  EXPECT_EQ(Answer(init), before);
  EXPECT_FALSE(wire_.DirectIoMmapAllowed());
  EXPECT_FALSE(wire_.ParallelDirectWrites());
  EXPECT_NE(wire_.Summary().find("not offered"), std::string::npos) << wire_.Summary();

  Send(Request(FUSE_OPEN, 4, fuse_open_in{}, sizeof(fuse_open_in)));
  Reply open = OpenReply(4, FUSE_OPEN, FOPEN_DIRECT_IO);
  EXPECT_EQ(OpenFlags(Reply(4, Answer(open)), FUSE_OPEN), FOPEN_DIRECT_IO);
}

}  // namespace
}  // namespace sfs::fuse
