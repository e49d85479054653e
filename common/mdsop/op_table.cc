// The table of every MDS op (see op_table.h). Adding an op to MdsRequest
// means adding its row here: op_effects_test fails until then.
// A row that names nothing for a mutating op must say why in `neutral`.
#include "common/mdsop/op_table.h"

#include <algorithm>
#include <iterator>

namespace sfs::mdsop {
namespace {

using proto::MdsRequest;
using proto::MdsResponse;

struct Row {
  MdsRequest::OpCase op;
  OpEffects effects;
};

// Requests that name one entry by `parent` and `name`.
template <typename Req>
std::vector<NameRef> Named(const Req& q) {
  return {{q.parent(), q.name()}};
}

// A file's first write open: readers' kept opens (client open_cache.h) end
// before it is answered (mds.proto OpenResp.first_write_open).
std::vector<uint64_t> FirstWriteOpen(const MdsResponse& resp) {
  if (!resp.open().first_write_open()) return {};
  return {resp.open().attr().ino()};
}

std::vector<uint64_t> Closed(const MdsRequest& r) {
  const proto::CloseReq& c = r.close();
  // A close with nothing to report only releases the open.
  if (c.has_size() || c.has_blocks() || c.mtime_ns() != 0) return {c.ino()};
  return {};
}

const Row kRows[] = {
    // Reads: they change nothing; the named ones lease the directory looked in.
    {MdsRequest::kLookup,
     {.lease_dir = [](const MdsRequest& r) { return r.lookup().parent(); }}},
    {MdsRequest::kGetattr, {}},
    {MdsRequest::kReadlink, {}},
    {MdsRequest::kReaddir,
     {.lease_dir = [](const MdsRequest& r) { return r.readdir().ino(); }}},
    {MdsRequest::kStatfs, {}},
    {MdsRequest::kGetxattr, {}},
    {MdsRequest::kListxattr, {}},
    {MdsRequest::kGetLayout, {}},
    {MdsRequest::kGetOstMap, {}},
    {MdsRequest::kPing, {}},
    {MdsRequest::kSync, {}},  // waits for a commit; changes nothing
    {MdsRequest::kWatch, {}},  // the lease protocol's own long poll and acks
    {MdsRequest::kRebuildStatus, {}},  // reads the rebuild's progress
    {MdsRequest::kTenantHello, {}},    // a nonce in memory only (tenant_gate.h)
    {MdsRequest::kTenantAuth, {}},     // a session in memory only
    {MdsRequest::kKvGrant, {}},        // signs a KV capability; stores nothing

    // Changes of names.
    {MdsRequest::kCreate,
     {.mutating = true,
      .names = [](const MdsRequest& r) { return Named(r.create()); },
      // A create that opened an existing file changed no name.
      .names_changed = [](const MdsResponse& resp) { return resp.open().created(); },
      .lease_dir = [](const MdsRequest& r) { return r.create().parent(); },
      .reply_inodes = FirstWriteOpen,
      .acked_at_once = "an O_CREAT open of a file that exists only records the open",
      .acked_at_once_if = [](const MdsResponse& resp) { return !resp.open().created(); }}},
    {MdsRequest::kMknod,
     {.mutating = true,
      .names = [](const MdsRequest& r) { return Named(r.mknod()); },
      .lease_dir = [](const MdsRequest& r) { return r.mknod().parent(); }}},
    {MdsRequest::kMkdir,
     {.mutating = true,
      .names = [](const MdsRequest& r) { return Named(r.mkdir()); },
      .lease_dir = [](const MdsRequest& r) { return r.mkdir().parent(); }}},
    {MdsRequest::kSymlink,
     {.mutating = true,
      .names = [](const MdsRequest& r) { return Named(r.symlink()); },
      .lease_dir = [](const MdsRequest& r) { return r.symlink().parent(); }}},
    {MdsRequest::kLink,
     {.mutating = true,
      .names = [](const MdsRequest& r) -> std::vector<NameRef> {
        return {{r.link().new_parent(), r.link().new_name()}};
      },
      .lease_dir = [](const MdsRequest& r) { return r.link().new_parent(); },
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> { return {r.link().ino()}; }}},
    {MdsRequest::kUnlink,
     {.mutating = true,
      .names = [](const MdsRequest& r) { return Named(r.unlink()); },
      .unbinds = true,
      .lease_dir = [](const MdsRequest& r) { return r.unlink().parent(); }}},
    {MdsRequest::kRmdir,
     {.mutating = true,
      .names = [](const MdsRequest& r) { return Named(r.rmdir()); },
      .unbinds = true,
      .lease_dir = [](const MdsRequest& r) { return r.rmdir().parent(); }}},
    {MdsRequest::kRename,
     {.mutating = true,
      .names = [](const MdsRequest& r) -> std::vector<NameRef> {
        return {{r.rename().parent(), r.rename().name()},
                {r.rename().new_parent(), r.rename().new_name()}};
      },
      .unbinds = true,
      // Only within one directory: the reply carries one parent lease.
      .lease_dir = [](const MdsRequest& r) -> uint64_t {
        return r.rename().parent() == r.rename().new_parent() ? r.rename().parent() : 0;
      }}},

    // Changes of one inode's attributes (size, times, mode, xattrs, layout).
    {MdsRequest::kSetattr,
     {.mutating = true,
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> { return {r.setattr().ino()}; }}},
    {MdsRequest::kSetSize,
     {.mutating = true,
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> { return {r.set_size().ino()}; },
      .acked_at_once = "a size report: fsync promises it, and waits for its commit"}},
    {MdsRequest::kAppend,
     {.mutating = true,
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> { return {r.append().ino()}; },
      .acked_at_once = "reserves an append's range: the size it reaches is fsync's promise"}},
    {MdsRequest::kClose,
     {.mutating = true,
      .inodes = Closed,
      .acked_at_once = "ends an open and reports a size, as close(2) on ext4 does not sync"}},
    {MdsRequest::kSetxattr,
     {.mutating = true,
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> { return {r.setxattr().ino()}; }}},
    {MdsRequest::kRemovexattr,
     {.mutating = true,
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> {
        return {r.removexattr().ino()};
      }}},
    {MdsRequest::kSetLayout,
     {.mutating = true,
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> {
        return {r.set_layout().ino()};
      }}},
    {MdsRequest::kMirrorState,
     {.mutating = true,
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> {
        return {r.mirror_state().ino()};
      }}},
    {MdsRequest::kMigrateCommit,
     {.mutating = true,
      .inodes = [](const MdsRequest& r) -> std::vector<uint64_t> {
        if (r.migrate_commit().abort()) return {};  // the file keeps its layout
        return {r.migrate_commit().ino()};
      }}},

    // Mutating, yet nothing a client caches under a lease changes.
    {MdsRequest::kOpen,
     {.mutating = true,
      .reply_inodes = FirstWriteOpen,
      .neutral = "registers an open and changes no attribute or name; the client sends "
                 "O_TRUNC of an existing file as a SetAttr of its own (a file's first write "
                 "open revokes its leases all the same: reply_inodes)",
      .acked_at_once = "the record of an open, re-established by the client after a restart"}},
    {MdsRequest::kOpenPath,
     {.mutating = true,
      .reply_inodes = FirstWriteOpen,
      .neutral = "an open whose walk only reads names (as lookups do, leasing none: no "
                 "directory is leased by it); O_TRUNC goes as a SetAttr, as for kOpen",
      .acked_at_once = "the record of an open, as kOpen's"}},
    {MdsRequest::kMigrateBegin,
     {.mutating = true,
      .neutral = "records the migration and allocates its objects; the file's attributes "
                 "and layout change only at MigrateCommit"}},
    {MdsRequest::kPool,
     {.mutating = true,
      .neutral = "changes pool records only: layouts name pools by string, so no inode "
                 "changes, and no client caches pools"}},
    {MdsRequest::kQos,
     {.mutating = true,
      .neutral = "changes QoS records only, which the OSSes read from heartbeat replies; "
                 "no inode changes and no client caches them"}},
    {MdsRequest::kOstLost,
     {.mutating = true,
      .neutral = "marks an OST and its objects lost in layouts; mounts learn it from the OST "
                 "map and from the layout at the next open, neither cached under a lease"}},
    {MdsRequest::kScrub,
     {.mutating = true,
      .neutral = "marks bad copies or chunks stale for the resyncer: object states only, "
                 "which no mount caches under a lease"}},
    {MdsRequest::kTenantAdmin,
     {.mutating = true,
      .neutral = "changes tenant records only; sessions learn of it at their next request"}},
    {MdsRequest::kRegisterOss,
     {.mutating = true,
      .neutral = "changes the OST registry, which clients read with GetOstMap, not under "
                 "a lease"}},
    {MdsRequest::kHeartbeat,
     {.mutating = true, .neutral = "updates the OST registry's liveness and space figures"}},
    {MdsRequest::kOssHello,
     {.mutating = true,
      .neutral = "hands an OSS a one-use nonce for its next registration or heartbeat "
                 "proof (oss_gate.h): memory only, no namespace record"}},
    {MdsRequest::kCapKey,
     {.mutating = true,
      .neutral = "rotates the capability signing keys (signing_keys.h): memory only, no "
                 "namespace record"}},
    {MdsRequest::kReplay,
     {.mutating = true,
      .neutral = "re-applies requests the client kept (replay_ops.cc), each under its own "
                 "row: the MDS revokes what each changes; answered after its commit"}},
    {MdsRequest::kLock,
     {.mutating = true,
      .neutral = "changes the LockTable only; a holder reports the size it wrote with "
                 "its own SetSize or Close before it unlocks"}},
};

}  // namespace

const OpEffects* FindOpEffects(MdsRequest::OpCase op) {
  auto it = std::find_if(std::begin(kRows), std::end(kRows),
                         [op](const Row& row) { return row.op == op; });
  return it == std::end(kRows) ? nullptr : &it->effects;
}

bool ChangesLeased(const MdsRequest& r, const MdsResponse* resp) {
  if (resp != nullptr && resp->status().code() != 0) return false;
  const OpEffects* e = FindOpEffects(r.op_case());
  if (e == nullptr) return resp == nullptr;
  if (e->names != nullptr && !e->names(r).empty() &&
      (resp == nullptr || e->names_changed == nullptr || e->names_changed(*resp))) {
    return true;
  }
  if (e->inodes != nullptr && !e->inodes(r).empty()) return true;
  if (e->reply_inodes == nullptr) return false;
  return resp == nullptr || !e->reply_inodes(*resp).empty();
}

}  // namespace sfs::mdsop
