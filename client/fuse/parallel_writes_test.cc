// parallel_writes: the open/create reply rewrite that adds
// FOPEN_PARALLEL_DIRECT_WRITES, on replies laid out as libfuse sends them.
#include "client/fuse/parallel_writes.h"

#include <linux/fuse.h>

#include <cstring>

#include <gtest/gtest.h>

namespace sfs::fuse {
namespace {

// An OPEN or CREATE reply: header in iov[0], the argument in iov[1].
struct Reply {
  fuse_out_header out{};
  fuse_entry_out entry{};  // CREATE only
  fuse_open_out open{};
  unsigned char arg[sizeof(fuse_entry_out) + sizeof(fuse_open_out)] = {};
  iovec iov[2] = {};

  Reply(uint32_t opcode, uint32_t open_flags, int32_t error = 0) {
    open.fh = 42;
    open.open_flags = open_flags;
    size_t len = sizeof(open);
    if (opcode == FUSE_CREATE) {
      entry.nodeid = 7;
      std::memcpy(arg, &entry, sizeof(entry));
      std::memcpy(arg + sizeof(entry), &open, sizeof(open));
      len += sizeof(entry);
    } else {
      std::memcpy(arg, &open, sizeof(open));
    }
    out.len = static_cast<uint32_t>(sizeof(out) + len);
    out.error = error;
    out.unique = 99;
    iov[0] = {&out, sizeof(out)};
    iov[1] = {arg, len};
  }
  fuse_open_out Open(uint32_t opcode) const {
    fuse_open_out o;
    std::memcpy(&o, arg + (opcode == FUSE_CREATE ? sizeof(fuse_entry_out) : 0), sizeof(o));
    return o;
  }
};

TEST(ParallelWritesTest, ADirectIoOpenReplyGetsTheParallelWritesFlag) {
  Reply r(FUSE_OPEN, FOPEN_DIRECT_IO);
  EXPECT_TRUE(MarkParallelIfDirect(r.iov, 2, FUSE_OPEN));
  EXPECT_EQ(r.Open(FUSE_OPEN).open_flags, FOPEN_DIRECT_IO | FOPEN_PARALLEL_DIRECT_WRITES);
  EXPECT_EQ(r.Open(FUSE_OPEN).fh, 42u);
}

TEST(ParallelWritesTest, ADirectIoCreateReplyGetsTheFlagInItsOpenPartOnly) {
  Reply r(FUSE_CREATE, FOPEN_DIRECT_IO | FOPEN_KEEP_CACHE);
  EXPECT_TRUE(MarkParallelIfDirect(r.iov, 2, FUSE_CREATE));
  EXPECT_EQ(r.Open(FUSE_CREATE).open_flags,
            FOPEN_DIRECT_IO | FOPEN_KEEP_CACHE | FOPEN_PARALLEL_DIRECT_WRITES);
  fuse_entry_out e;
  std::memcpy(&e, r.arg, sizeof(e));
  EXPECT_EQ(e.nodeid, 7u);
}

TEST(ParallelWritesTest, PageCacheOpensErrorsAndOtherShapesAreLeftAlone) {
  Reply cached(FUSE_OPEN, FOPEN_KEEP_CACHE);
  EXPECT_FALSE(MarkParallelIfDirect(cached.iov, 2, FUSE_OPEN));
  EXPECT_EQ(cached.Open(FUSE_OPEN).open_flags, FOPEN_KEEP_CACHE);
  Reply error(FUSE_OPEN, FOPEN_DIRECT_IO, -ENOENT);
  EXPECT_FALSE(MarkParallelIfDirect(error.iov, 2, FUSE_OPEN));
  Reply open_as_create(FUSE_OPEN, FOPEN_DIRECT_IO);  // wrong size for a CREATE reply
  EXPECT_FALSE(MarkParallelIfDirect(open_as_create.iov, 2, FUSE_CREATE));
  EXPECT_FALSE(MarkParallelIfDirect(open_as_create.iov, 1, FUSE_OPEN));
  EXPECT_EQ(open_as_create.Open(FUSE_OPEN).open_flags, FOPEN_DIRECT_IO);
}

}  // namespace
}  // namespace sfs::fuse
