// MdsClient's lost-OST and rebuild calls (mds.proto OstLostReq,
// RebuildStatusReq; docs/redundancy.md "Rebuild").
#include <set>

#include "client/lib/mds_client.h"
#include "mds.pb.h"

namespace sfs::client {

Result<uint64_t> MdsClient::OstLost(const Cred& c, uint32_t index) {
  proto::MdsRequest req;
  req.mutable_ost_lost()->set_index(index);
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
  return resp.rebuild_status().files_marked();
}

Result<RebuildStatus> MdsClient::GetRebuildStatus() {
  proto::MdsRequest req;
  req.mutable_rebuild_status();
  proto::MdsResponse resp;
  SFS_RETURN_IF_ERROR(Call(nullptr, &req, &resp));
  const proto::RebuildStatusResp& r = resp.rebuild_status();
  RebuildStatus out;
  out.lost_osts.assign(r.lost_osts().begin(), r.lost_osts().end());
  out.files_pending = r.files_pending();
  out.objects_pending = r.objects_pending();
  out.bytes_pending = r.bytes_pending();
  out.objects_done = r.objects_done();
  out.bytes_done = r.bytes_done();
  out.failures = r.failures();
  out.bytes_per_s = r.bytes_per_s();
  out.paused.assign(r.paused().begin(), r.paused().end());
  return out;
}

// One ScrubReq reads for about two seconds; the file's scrub is as many as
// it takes, each from where the last stopped (mds.proto ScrubReq), so that
// none nears the RPC timeout (a timed-out call would be retried from its start).
Result<ScrubResult> MdsClient::Scrub(const Cred& c, uint64_t ino, bool repair) {
  ScrubResult out;
  std::set<int32_t> bad;  // an object bad in several calls counts once
  uint64_t offset = 0;
  for (;;) {
    proto::MdsRequest req;
    req.mutable_scrub()->set_ino(ino);
    req.mutable_scrub()->set_repair(repair);
    req.mutable_scrub()->set_offset(offset);
    proto::MdsResponse resp;
    SFS_RETURN_IF_ERROR(Call(&c, &req, &resp));
    const proto::ScrubResp& r = resp.scrub();
    out.objects_checked += r.objects_checked();
    out.bytes_checked += r.bytes_checked();
    out.mismatched_rows += r.mismatched_rows();
    out.repairs_queued += r.repairs_queued();
    out.busy = out.busy || r.busy();
    out.problems.insert(out.problems.end(), r.problems().begin(), r.problems().end());
    bad.insert(r.bad_indices().begin(), r.bad_indices().end());
    ++out.calls;
    if (!r.more() || r.busy() || r.next_offset() <= offset) break;
    offset = r.next_offset();
  }
  out.bad_objects = bad.size();
  return out;
}

}  // namespace sfs::client
