// Wire flags: two FUSE protocol flags that libfuse 3.14's API cannot express,
// added to sfs-mount's replies on their way to /dev/fuse.
//
// - FUSE_DIRECT_IO_ALLOW_MMAP (INIT flag bit 36, i.e. fuse_init_out.flags2
//   bit 4; protocol 7.39, Linux >= 6.6): without it the kernel refuses a
//   MAP_SHARED mmap of a file opened with FOPEN_DIRECT_IO (ENODEV), so only
//   handles nobody can mmap (write-only ones) may use direct I/O. Once the
//   kernel has taken it, DirectIoMmapAllowed() says so and read-write
//   handles may be given direct I/O too (fuse_file_ops.cc decides).
// - FOPEN_PARALLEL_DIRECT_WRITES (fuse_open_out.open_flags bit 6; protocol
//   7.38, Linux >= 6.2): without it the kernel takes the inode lock
//   exclusively for every write(2), so writers of one file (IOR's N-to-1)
//   wait for each other's round trips to the OSSes. It is added to every
//   OPEN and CREATE reply that has FOPEN_DIRECT_IO. The kernel still
//   serialises writes that extend the file or append, and all writes while
//   some handle of the inode uses the page cache.
//
// How: the session gets a custom read/writev pair (fuse_session_custom_io on
// the fd fuse_session_mount opened; libfuse 3.14 also calls it for every
// clone_fd worker channel). read() notes the unique id of each INIT, OPEN and
// CREATE request and what the kernel's INIT offered; writev() patches a
// flag word in place in the reply to such a request, and forwards every
// other message untouched and uncopied (READ data included). libfuse only
// bypasses read() when it splices requests in (FUSE_CAP_SPLICE_READ), and it
// never does here: that capability needs an io splice_receive hook, which
// this one leaves out on purpose. splice_send is passed through, so
// -o splice_write still hands READ data over by splice (such replies need
// no patching).
//
// Measured (the parallel-writes half, commit dd7571d): rewriting a shared
// file in 47008-byte pieces 1.7x faster; a first write, which keeps
// extending the file, no faster.
#pragma once

#define FUSE_USE_VERSION 314
#include <fuse3/fuse_lowlevel.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace sfs::fuse {

// FUSE_DIRECT_IO_ALLOW_MMAP as a 64-bit INIT flag; Debian 12's <linux/fuse.h>
// (7.38) predates it. Bit 36 was first named FUSE_DIRECT_IO_RELAX (Linux 6.6).
inline constexpr uint64_t kDirectIoAllowMmap = uint64_t{1} << 36;
// The kernel protocol minors that introduced each flag.
inline constexpr uint32_t kMinorDirectIoAllowMmap = 39;
inline constexpr uint32_t kMinorParallelDirectWrites = 38;

// What the kernel's INIT request offered.
struct KernelInit {
  uint32_t major = 0;
  uint32_t minor = 0;
  uint64_t flags = 0;  // flags | flags2 << 32 (flags2 only when FUSE_INIT_EXT is set)
};

// The INIT request in buf[0, len) (fuse_in_header + fuse_init_in, as read
// from /dev/fuse), or nullopt if buf is not a whole INIT request.
std::optional<KernelInit> ParseInitRequest(const void* buf, size_t len);

// Adds the 64-bit INIT flags `flags` (and FUSE_INIT_EXT if any bit >= 32 is
// among them) to an INIT reply laid out as libfuse sends it: iov[0] the
// fuse_out_header, iov[1] the fuse_init_out. True iff it did; false, with
// nothing changed, for an error reply, another shape, or a fuse_init_out too
// short to hold flags2 when it would need it.
bool AddInitFlags(struct iovec* iov, int count, uint64_t flags);

// Adds FOPEN_PARALLEL_DIRECT_WRITES to an OPEN (fuse_open_out) or CREATE
// (fuse_entry_out + fuse_open_out) reply whose open_flags have
// FOPEN_DIRECT_IO; the reply is iov[0] header, iov[1] argument. True iff it
// added the flag; any other reply or shape is left alone.
bool AddParallelIfDirect(struct iovec* iov, int count, uint32_t opcode);

// Sets max_pages of an INIT reply laid out as for AddInitFlags, if the reply
// has FUSE_MAX_PAGES among its flags. True iff it did.
bool SetInitMaxPages(struct iovec* iov, int count, uint16_t pages);

// The hooks and what they learnt from the INIT exchange.
//
// Thread safety: OnRead/OnWritev run on every libfuse worker at once; the
// accessors may be called from any thread. The INIT reply's verdict is
// recorded before the reply is written, so it is visible to any request
// the kernel sends after taking that reply.
class WireFlags {
 public:
  WireFlags() = default;
  ~WireFlags();
  WireFlags(const WireFlags&) = delete;
  WireFlags& operator=(const WireFlags&) = delete;

  // Makes se read and write /dev/fuse through OnRead/OnWritev.
  // REQUIRES: called once, after fuse_session_mount and before the session
  // loop reads the first request; *this outlives se; no other WireFlags is
  // installed in this process (EBUSY otherwise: see the .cc for why).
  Status Install(fuse_session* se);

  // True iff the kernel offered FUSE_DIRECT_IO_ALLOW_MMAP and our INIT reply
  // carried it, i.e. a MAP_SHARED mmap of an FOPEN_DIRECT_IO handle works.
  // False before INIT, or without Install.
  bool DirectIoMmapAllowed() const { return mmap_allowed_.load(std::memory_order_acquire); }
  // True iff direct-I/O OPEN/CREATE replies get FOPEN_PARALLEL_DIRECT_WRITES
  // (the kernel's protocol minor is at least kMinorParallelDirectWrites).
  bool ParallelDirectWrites() const { return parallel_.load(std::memory_order_acquire); }
  // The kernel's protocol minor from its INIT request; 0 before it.
  uint32_t KernelMinor() const { return kernel_minor_.load(std::memory_order_acquire); }

  // Asks for READ requests of up to `pages` pages: the INIT reply's
  // max_pages (libfuse 3.14 derives it from max_write, at most 256 pages =
  // 1 MiB) becomes `pages` when the kernel offered FUSE_MAX_PAGES. The
  // kernel caps it at its fs.fuse.max_pages_limit. 0 (the default) leaves
  // libfuse's value. REQUIRES: before the session loop starts.
  void SetMaxPages(uint16_t pages) { max_pages_ = pages; }
  // The max_pages our INIT reply carried; 0 before INIT or if unchanged.
  uint16_t MaxPagesSent() const { return max_pages_sent_.load(std::memory_order_acquire); }

  // What the hooks do: read(2) / writev(2) on fd plus the bookkeeping and
  // patching above. Public so that tests can drive them over a pipe.
  ssize_t OnRead(int fd, void* buf, size_t len);
  ssize_t OnWritev(int fd, struct iovec* iov, int count);

  // One line for the mount's log: which flags the kernel took, and why not.
  std::string Summary() const;

 private:
  // INIT, OPEN and CREATE requests read and not yet answered.
  class Pending {
   public:
    void Add(uint64_t unique, uint32_t opcode);
    // The opcode of pending request `unique`, which stops being pending; 0
    // if it was not one of ours.
    uint32_t Take(uint64_t unique);

   private:
    struct Request {
      uint64_t unique;
      uint32_t opcode;
    };
    std::mutex mu_;
    std::vector<Request> requests_;  // GUARDED_BY(mu_); about as many as opens in flight
    std::atomic<size_t> count_{0};   // requests_.size(), read without mu_ on every reply
  };

  void NoteRequest(const void* buf, size_t len);
  // Patches the reply to a request of ours; true iff it is the INIT reply.
  bool PatchReply(struct iovec* iov, int count, uint32_t opcode);

  Pending pending_;
  std::atomic<uint64_t> offered_{0};     // the kernel INIT's flags
  std::atomic<uint32_t> kernel_minor_{0};
  std::atomic<bool> mmap_allowed_{false};
  std::atomic<bool> parallel_{false};
  std::atomic<bool> init_logged_{false};
  uint16_t max_pages_ = 0;
  std::atomic<uint16_t> max_pages_sent_{0};
};

}  // namespace sfs::fuse
