// Wire flags (see wire_flags.h): /dev/fuse read and writev hooks that add
// FUSE_DIRECT_IO_ALLOW_MMAP to the INIT reply and FOPEN_PARALLEL_DIRECT_WRITES
// to direct-I/O open replies.
#include "client/fuse/wire_flags.h"

#include <fcntl.h>
#include <linux/fuse.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/log.h"

namespace sfs::fuse {
namespace {

// The installed WireFlags. libfuse 3.14 calls the custom io hooks with the
// session's userdata, which is the FuseOps object, not a pointer of the
// hooks' own; so the trampolines below find their object here. sfs-mount
// runs one session per process, and Install refuses a second object.
std::atomic<WireFlags*> g_installed{nullptr};

ssize_t ReadHook(int fd, void* buf, size_t len, void* /*session userdata*/) {
  return g_installed.load(std::memory_order_acquire)->OnRead(fd, buf, len);
}

ssize_t WritevHook(int fd, struct iovec* iov, int count, void* /*session userdata*/) {
  return g_installed.load(std::memory_order_acquire)->OnWritev(fd, iov, count);
}

// Only READ replies (fuse_reply_data) and store notifications go this way;
// neither is one we patch.
ssize_t SpliceSendHook(int fdin, off_t* offin, int fdout, off_t* offout, size_t len,
                       unsigned int flags, void* /*session userdata*/) {
  return ::splice(fdin, offin, fdout, offout, len, flags);
}

template <typename T>
T Load(const void* at) {
  T v;
  std::memcpy(&v, at, sizeof(v));
  return v;
}

template <typename T>
void Store(void* at, T v) {
  std::memcpy(at, &v, sizeof(v));
}

// iov[0] is a success header covering exactly iov[0] and iov[1], and iov[1]
// holds at least min_arg bytes.
bool IsOkReply(const struct iovec* iov, int count, size_t min_arg) {
  if (count != 2 || iov[0].iov_len != sizeof(fuse_out_header) || iov[1].iov_len < min_arg) {
    return false;
  }
  auto out = Load<fuse_out_header>(iov[0].iov_base);
  return out.error == 0 && out.len == sizeof(fuse_out_header) + iov[1].iov_len;
}

const char* Verdict(bool on, const char* why_not) { return on ? "accepted" : why_not; }

}  // namespace

std::optional<KernelInit> ParseInitRequest(const void* buf, size_t len) {
  // fuse_init_in before 7.36 ended at flags; flags2 follows it since.
  constexpr size_t kShortInit = offsetof(fuse_init_in, flags2);
  constexpr size_t kFlags2End = offsetof(fuse_init_in, flags2) + sizeof(uint32_t);
  if (len < sizeof(fuse_in_header) + kShortInit) return std::nullopt;
  auto in = Load<fuse_in_header>(buf);
  if (in.opcode != FUSE_INIT || in.len != len) return std::nullopt;
  const auto* arg = static_cast<const uint8_t*>(buf) + sizeof(fuse_in_header);
  KernelInit k;
  k.major = Load<uint32_t>(arg + offsetof(fuse_init_in, major));
  k.minor = Load<uint32_t>(arg + offsetof(fuse_init_in, minor));
  k.flags = Load<uint32_t>(arg + offsetof(fuse_init_in, flags));
  if ((k.flags & FUSE_INIT_EXT) != 0 && len >= sizeof(fuse_in_header) + kFlags2End) {
    k.flags |= uint64_t{Load<uint32_t>(arg + offsetof(fuse_init_in, flags2))} << 32;
  }
  return k;
}

// libfuse 3.14 sends sizeof(fuse_init_out), 64 bytes with flags2 at 24, to a
// kernel of minor >= 23; it sends 24 bytes (no flags2) only to older ones.
bool AddInitFlags(struct iovec* iov, int count, uint64_t flags) {
  uint64_t high = flags >> 32;
  if (high != 0) flags |= FUSE_INIT_EXT;
  size_t need = high != 0 ? offsetof(fuse_init_out, flags2) + sizeof(uint32_t)
                          : offsetof(fuse_init_out, flags) + sizeof(uint32_t);
  if (!IsOkReply(iov, count, need)) return false;
  auto* arg = static_cast<uint8_t*>(iov[1].iov_base);
  uint8_t* low_at = arg + offsetof(fuse_init_out, flags);
  Store<uint32_t>(low_at, Load<uint32_t>(low_at) | static_cast<uint32_t>(flags));
  if (high != 0) {
    uint8_t* high_at = arg + offsetof(fuse_init_out, flags2);
    Store<uint32_t>(high_at, Load<uint32_t>(high_at) | static_cast<uint32_t>(high));
  }
  return true;
}

bool SetInitMaxPages(struct iovec* iov, int count, uint16_t pages) {
  if (!IsOkReply(iov, count, offsetof(fuse_init_out, max_pages) + sizeof(uint16_t))) return false;
  auto* arg = static_cast<uint8_t*>(iov[1].iov_base);
  if ((Load<uint32_t>(arg + offsetof(fuse_init_out, flags)) & FUSE_MAX_PAGES) == 0) return false;
  Store<uint16_t>(arg + offsetof(fuse_init_out, max_pages), pages);
  return true;
}

// An OPEN reply is fuse_open_out; a CREATE reply is fuse_entry_out followed
// by fuse_open_out. The bytes belong to the libfuse thread sending them,
// which is blocked in our writev, so they are patched in place.
bool AddParallelIfDirect(struct iovec* iov, int count, uint32_t opcode) {
  size_t arg = sizeof(fuse_open_out);
  if (opcode == FUSE_CREATE) {
    arg += sizeof(fuse_entry_out);
  } else if (opcode != FUSE_OPEN) {
    return false;
  }
  if (!IsOkReply(iov, count, arg) || iov[1].iov_len != arg) return false;
  uint8_t* at = static_cast<uint8_t*>(iov[1].iov_base) + arg - sizeof(fuse_open_out) +
                offsetof(fuse_open_out, open_flags);
  uint32_t open_flags = Load<uint32_t>(at);
  if ((open_flags & FOPEN_DIRECT_IO) == 0) return false;
  Store<uint32_t>(at, open_flags | FOPEN_PARALLEL_DIRECT_WRITES);
  return true;
}

void WireFlags::Pending::Add(uint64_t unique, uint32_t opcode) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.push_back({unique, opcode});
  count_.store(requests_.size(), std::memory_order_release);
}

uint32_t WireFlags::Pending::Take(uint64_t unique) {
  // Most replies are to other requests, and mostly none of ours is pending.
  if (count_.load(std::memory_order_acquire) == 0) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i].unique != unique) continue;
    uint32_t opcode = requests_[i].opcode;
    requests_[i] = requests_.back();
    requests_.pop_back();
    count_.store(requests_.size(), std::memory_order_release);
    return opcode;
  }
  return 0;
}

WireFlags::~WireFlags() {
  WireFlags* self = this;
  g_installed.compare_exchange_strong(self, nullptr);
}

Status WireFlags::Install(fuse_session* se) {
  WireFlags* none = nullptr;
  if (!g_installed.compare_exchange_strong(none, this)) {
    return Status(EBUSY, "another WireFlags is installed in this process");
  }
  fuse_custom_io io{};
  io.read = ReadHook;
  io.writev = WritevHook;
  io.splice_send = SpliceSendHook;
  // No splice_receive: libfuse then never splices requests in past ReadHook.
  // The same fd: the session keeps it and closes it once.
  int rc = fuse_session_custom_io(se, &io, fuse_session_fd(se));
  if (rc != 0) {
    g_installed.store(nullptr, std::memory_order_release);
    return Status(rc < 0 ? -rc : EINVAL, "fuse_session_custom_io failed");
  }
  return Status::Ok();
}

ssize_t WireFlags::OnRead(int fd, void* buf, size_t len) {
  ssize_t n = ::read(fd, buf, len);
  if (n >= static_cast<ssize_t>(sizeof(fuse_in_header))) NoteRequest(buf, static_cast<size_t>(n));
  return n;
}

void WireFlags::NoteRequest(const void* buf, size_t len) {
  auto in = Load<fuse_in_header>(buf);
  if (in.opcode == FUSE_OPEN || in.opcode == FUSE_CREATE) {
    if (parallel_.load(std::memory_order_relaxed)) pending_.Add(in.unique, in.opcode);
    return;
  }
  if (in.opcode != FUSE_INIT) return;
  std::optional<KernelInit> k = ParseInitRequest(buf, len);
  // A major above 7 gets libfuse's plain answer and a second INIT.
  if (!k || k->major != FUSE_KERNEL_VERSION) return;
  offered_.store(k->flags, std::memory_order_relaxed);
  kernel_minor_.store(k->minor, std::memory_order_release);
  parallel_.store(k->minor >= kMinorParallelDirectWrites, std::memory_order_release);
  pending_.Add(in.unique, in.opcode);
}

bool WireFlags::PatchReply(struct iovec* iov, int count, uint32_t opcode) {
  if (opcode != FUSE_INIT) {
    AddParallelIfDirect(iov, count, opcode);
    return false;
  }
  bool offered = (offered_.load(std::memory_order_relaxed) & kDirectIoAllowMmap) != 0;
  // Recorded before the write: the kernel may send (and another worker
  // handle) an OPEN as soon as it has taken the reply, before writev returns.
  mmap_allowed_.store(offered && AddInitFlags(iov, count, kDirectIoAllowMmap),
                      std::memory_order_release);
  if (max_pages_ != 0 && SetInitMaxPages(iov, count, max_pages_)) {
    max_pages_sent_.store(max_pages_, std::memory_order_release);
  }
  return true;
}

ssize_t WireFlags::OnWritev(int fd, struct iovec* iov, int count) {
  bool init = false;
  if (count > 0 && iov[0].iov_len >= sizeof(fuse_out_header)) {
    auto out = Load<fuse_out_header>(iov[0].iov_base);
    // Notifications have unique 0; a reply with an error still ends the request.
    uint32_t opcode = out.unique == 0 ? 0 : pending_.Take(out.unique);
    if (opcode != 0) init = PatchReply(iov, count, opcode);
  }
  ssize_t n = ::writev(fd, iov, count);
  if (init) {
    if (n < 0) mmap_allowed_.store(false, std::memory_order_release);
    if (!init_logged_.exchange(true)) LOG_INFO("wire flags: " << Summary());
  }
  return n;
}

std::string WireFlags::Summary() const {
  uint32_t minor = KernelMinor();
  if (minor == 0) return "no INIT request seen";
  bool offered = (offered_.load(std::memory_order_relaxed) & kDirectIoAllowMmap) != 0;
  std::ostringstream os;
  os << "kernel FUSE 7." << minor << ": FUSE_DIRECT_IO_ALLOW_MMAP "
     << Verdict(DirectIoMmapAllowed(),
                offered ? "not accepted (INIT reply could not carry it)" : "not offered")
     << ", FOPEN_PARALLEL_DIRECT_WRITES "
     << Verdict(ParallelDirectWrites(), "not accepted (kernel protocol < 7.38)");
  if (max_pages_ != 0) {
    os << ", READ requests up to ";
    if (uint16_t p = MaxPagesSent(); p != 0) {
      os << p * 4 << " KiB pages asked (the kernel caps at fs.fuse.max_pages_limit)";
    } else {
      os << "1 MiB (no FUSE_MAX_PAGES in the INIT reply)";
    }
  }
  return os.str();
}

}  // namespace sfs::fuse
