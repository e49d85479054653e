// Space and copy operations as per-object OSS calls (space_ops.h).
#include "client/lib/space_ops.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "common/layout/stripe.h"
#include "common/log.h"
#include "oss.pb.h"

namespace sfs::client {
namespace {

// Most bytes one copy call moves (the OSS takes 64 MiB): about a second of
// disk at most, well inside the RPC timeout.
constexpr uint64_t kMaxCopyCall = 16 << 20;
// File bytes whose copy calls are in flight at once.
constexpr uint64_t kCopyWindow = 64 << 20;

// The capability tokens a call on l's objects carries (none without a key).
std::vector<std::pair<uint64_t, std::string>> CapsOf(const LayoutSpec& l) {
  if (l.capability.empty()) return {};
  return {{l.ino, l.capability}};
}

Result<layout::Geometry> GeometryOf(const LayoutSpec& l) {
  if (l.objects.empty() || l.stripe_size == 0) return Status(EIO, "file layout has no objects");
  return layout::Geometry{l.stripe_size, l.Stripes()};
}

// Object i of l's first copy of stripe `stripe` that is not stale (mirrored
// layouts; the stripe's first copy if all are).
const StripeObject& GoodCopy(Striper& s, const LayoutSpec& l, uint32_t stripe) {
  for (uint32_t m = 0; m < l.Copies(); ++m) {
    const size_t i = size_t{m} * l.Stripes() + stripe;
    if (!s.IsStale(l, i)) return l.objects[i];
  }
  return l.objects[stripe];
}

// A piece of a copy: in one stripe unit of both files.
struct Segment {
  uint64_t in_off = 0;  // file offsets
  uint64_t out_off = 0;
  uint64_t length = 0;
};

// One copy call and the segments it carries (for the client fallback).
struct CopyCall {
  StripeObject src, dst;
  uint64_t src_offset = 0, dst_offset = 0, length = 0;
  std::vector<Segment> segments;
};

// The copy calls of file range [in_off, in_off + len): a segment per pair of
// stripe units, merged into the last call of the same object pair when it
// continues it in both objects.
std::vector<CopyCall> PlanCopy(const LayoutSpec& from, const layout::Geometry& gi, uint64_t in_off,
                               const LayoutSpec& to, const layout::Geometry& go, uint64_t out_off,
                               uint64_t len) {
  std::vector<CopyCall> calls;
  std::map<std::tuple<uint32_t, uint32_t>, size_t> last;  // (src stripe, dst stripe) -> call
  for (uint64_t done = 0; done < len;) {
    const uint64_t a = in_off + done, b = out_off + done;
    const uint64_t n = std::min(
        {gi.stripe_size - a % gi.stripe_size, go.stripe_size - b % go.stripe_size, len - done});
    const layout::Extent x = layout::MapRange(gi, a, n)[0];
    const layout::Extent y = layout::MapRange(go, b, n)[0];
    auto it = last.find({x.stripe, y.stripe});
    CopyCall* c = it == last.end() ? nullptr : &calls[it->second];
    if (c == nullptr || c->src_offset + c->length != x.obj_offset ||
        c->dst_offset + c->length != y.obj_offset || c->length + n > kMaxCopyCall) {
      last[{x.stripe, y.stripe}] = calls.size();
      c = &calls.emplace_back();
      c->src = from.objects[x.stripe];
      c->dst = to.objects[y.stripe];
      c->src_offset = x.obj_offset;
      c->dst_offset = y.obj_offset;
    }
    c->length += n;
    c->segments.push_back({a, b, n});
    done += n;
  }
  return calls;
}

// The fallback for a call no OSS could do: its segments through this client.
Status CopyThroughClient(Striper& s, const LayoutSpec& from, const LayoutSpec& to,
                         const CopyCall& c) {
  std::vector<uint8_t> buf;
  for (const Segment& seg : c.segments) {
    buf.resize(seg.length);
    SFS_RETURN_IF_ERROR(s.Read(from, seg.in_off, buf));
    SFS_RETURN_IF_ERROR(s.Write(to, seg.out_off, buf));
  }
  return Status::Ok();
}

// One window of a copy: every call at once, then the fallbacks.
Status CopyWindow(Striper& s, const LayoutSpec& from, const LayoutSpec& to,
                  const std::vector<CopyCall>& plan) {
  std::vector<ObjectCall> calls(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    const CopyCall& c = plan[i];
    calls[i].ost = c.dst.ost;
    calls[i].oid = c.dst.oid;
    calls[i].mutates = true;
    calls[i].caps = CapsOf(to);  // the source's too: the OSS reads it for us
    for (auto& cap : CapsOf(from)) calls[i].caps.push_back(std::move(cap));
    calls[i].fill = [&c, address = s.AddressOf(c.src.ost)](proto::OssRequest& req) {
      proto::ObjCopyReq* copy = req.mutable_copy();
      copy->set_src_ost(c.src.ost);
      copy->set_src_oid(c.src.oid);
      copy->set_src_offset(c.src_offset);
      copy->set_offset(c.dst_offset);
      copy->set_length(c.length);
      copy->set_src_address(address);
    };
  }
  (void)s.Call(calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    const ObjectCall& call = calls[i];
    if (call.status.ok()) continue;
    if (!call.unknown_op && call.status.code() != EXDEV) return call.status;
    LOG_DEBUG("copy on OST " << call.ost << ": " << call.status.ToString()
                             << "; copying through the client");
    SFS_RETURN_IF_ERROR(CopyThroughClient(s, from, to, plan[i]));
  }
  return Status::Ok();
}

}  // namespace

Status FallocateObjects(Striper& s, const LayoutSpec& l, int mode, uint64_t off, uint64_t len) {
  SFS_ASSIGN_OR_RETURN(layout::Geometry g, GeometryOf(l));
  std::vector<ObjectCall> calls;
  for (uint32_t i = 0; i < g.stripe_count; ++i) {
    const uint64_t lo = layout::ObjectSize(g, i, off), hi = layout::ObjectSize(g, i, off + len);
    if (hi <= lo) continue;
    ObjectCall& c = calls.emplace_back();
    c.ost = l.objects[i].ost;
    c.oid = l.objects[i].oid;
    c.stripe = i;
    c.mutates = true;
    c.caps = CapsOf(l);
    c.fill = [mode, lo, hi](proto::OssRequest& req) {
      req.mutable_fallocate()->set_mode(static_cast<uint32_t>(mode));
      req.mutable_fallocate()->set_offset(lo);
      req.mutable_fallocate()->set_length(hi - lo);
    };
  }
  // Mirrored: to every good copy as a write of the range goes (its lock,
  // stale marking of a copy whose OSS missed it), so that no copy is left
  // unpunched or unextended without the MDS knowing.
  if (l.Copies() > 1) return s.CallMirrored(l, calls, off, off + len - 1);
  return s.Call(calls);
}

Result<std::optional<uint64_t>> SeekObjects(Striper& s, const LayoutSpec& l, uint64_t off,
                                            bool hole) {
  SFS_ASSIGN_OR_RETURN(layout::Geometry g, GeometryOf(l));
  std::vector<ObjectCall> calls(g.stripe_count);
  std::vector<std::optional<uint64_t>> found(g.stripe_count);  // object offsets
  for (uint32_t i = 0; i < g.stripe_count; ++i) {
    const uint64_t from = layout::ObjectSize(g, i, off);  // object i's first byte at/after off
    calls[i].ost = GoodCopy(s, l, i).ost;
    calls[i].oid = GoodCopy(s, l, i).oid;
    calls[i].caps = CapsOf(l);
    calls[i].fill = [from, hole](proto::OssRequest& req) {
      req.mutable_seek()->set_offset(from);
      req.mutable_seek()->set_hole(hole);
    };
    calls[i].on_reply = [&found, i](const proto::OssResponse& r) {
      if (r.seek().found()) found[i] = r.seek().offset();
    };
  }
  SFS_RETURN_IF_ERROR(s.Call(calls));
  std::optional<uint64_t> first;
  for (uint32_t i = 0; i < g.stripe_count; ++i) {
    if (!found[i]) continue;
    const uint64_t at = layout::FileOffset(g, i, *found[i]);
    if (!first || at < *first) first = at;
  }
  return first;
}

Status CopyObjects(Striper& s, const LayoutSpec& from, uint64_t in_off, const LayoutSpec& to,
                   uint64_t out_off, uint64_t len) {
  SFS_ASSIGN_OR_RETURN(layout::Geometry gi, GeometryOf(from));
  SFS_ASSIGN_OR_RETURN(layout::Geometry go, GeometryOf(to));
  if (from.Copies() > 1 || to.Copies() > 1 || from.IsEc() || to.IsEc()) {
    // Mirrored or erasure-coded: through this client, so that the Striper's
    // fan-out, fail-over, parity and stale marking apply (a server-side copy
    // knows of one object only).
    std::vector<uint8_t> buf;
    for (uint64_t done = 0; done < len;) {
      buf.resize(std::min<uint64_t>(len - done, 4 << 20));
      SFS_RETURN_IF_ERROR(s.Read(from, in_off + done, buf));
      SFS_RETURN_IF_ERROR(s.Write(to, out_off + done, buf));
      done += buf.size();
    }
    return Status::Ok();
  }
  for (uint64_t done = 0; done < len;) {
    const uint64_t n = std::min(len - done, kCopyWindow);
    SFS_RETURN_IF_ERROR(
        CopyWindow(s, from, to, PlanCopy(from, gi, in_off + done, to, go, out_off + done, n)));
    done += n;
  }
  return Status::Ok();
}

namespace {

// Object size of src (ObjectStat), or its error.
Result<uint64_t> ObjectSizeOf(Striper& s, const LayoutSpec& l, const StripeObject& o) {
  uint64_t size = 0;
  ObjectCall c;
  c.caps = CapsOf(l);
  c.ost = o.ost;
  c.oid = o.oid;
  c.fill = [](proto::OssRequest& req) { req.mutable_stat(); };
  c.on_reply = [&size](const proto::OssResponse& r) { size = r.stat().size(); };
  SFS_RETURN_IF_ERROR(s.Call(std::span<ObjectCall>(&c, 1)));
  return size;
}

Status ResyncOne(Striper& s, const LayoutSpec& l, const StripeObject& src,
                 const StripeObject& dst) {
  SFS_ASSIGN_OR_RETURN(uint64_t size, ObjectSizeOf(s, l, src));
  ObjectCall cut;
  cut.caps = CapsOf(l);
  cut.ost = dst.ost;
  cut.oid = dst.oid;
  cut.mutates = true;
  cut.fill = [size](proto::OssRequest& req) { req.mutable_truncate()->set_size(size); };
  SFS_RETURN_IF_ERROR(s.Call(std::span<ObjectCall>(&cut, 1)));
  std::vector<ObjectCall> calls;
  const std::string address = s.AddressOf(src.ost);
  for (uint64_t off = 0; off < size; off += kMaxCopyCall) {
    const uint64_t n = std::min(kMaxCopyCall, size - off);
    ObjectCall& c = calls.emplace_back();
    c.ost = dst.ost;
    c.oid = dst.oid;
    c.mutates = true;
    c.caps = CapsOf(l);
    c.fill = [src, off, n, address](proto::OssRequest& req) {
      proto::ObjCopyReq* copy = req.mutable_copy();
      copy->set_src_ost(src.ost);
      copy->set_src_oid(src.oid);
      copy->set_src_offset(off);
      copy->set_offset(off);
      copy->set_length(n);
      copy->set_src_address(address);
    };
  }
  for (size_t i = 0; i < calls.size(); i += 4) {  // 64 MiB in flight
    const size_t n = std::min<size_t>(4, calls.size() - i);
    SFS_RETURN_IF_ERROR(s.Call(std::span<ObjectCall>(calls.data() + i, n)));
  }
  // The copy's bytes durable before the MDS is told the copy is good.
  ObjectCall sync;
  sync.caps = CapsOf(l);
  sync.ost = dst.ost;
  sync.oid = dst.oid;
  sync.fill = [](proto::OssRequest& req) { req.mutable_sync(); };
  return s.Call(std::span<ObjectCall>(&sync, 1));
}

}  // namespace

Status ResyncCopies(Striper& s, const LayoutSpec& l, std::vector<StripeObject>* healed) {
  if (l.Copies() < 2) return Status(EINVAL, "file is not mirrored");
  const uint32_t stripes = l.Stripes();
  Status first;
  for (size_t i = 0; i < l.objects.size(); ++i) {
    if (!l.objects[i].stale) continue;
    const uint32_t stripe = static_cast<uint32_t>(i % stripes);
    Status st(EIO, "stripe " + std::to_string(stripe) + " has no good copy to resync from");
    for (uint32_t m = 0; m < l.Copies(); ++m) {
      const size_t j = size_t{m} * stripes + stripe;
      if (l.objects[j].stale) continue;
      st = ResyncOne(s, l, l.objects[j], l.objects[i]);
      if (st.ok()) break;
      LOG_WARN("resync of OST " << l.objects[i].ost << " object " << l.objects[i].oid
                                << " from OST " << l.objects[j].ost << ": " << st.ToString());
    }
    if (st.ok()) {
      healed->push_back(l.objects[i]);
    } else if (first.ok()) {
      first = Status(st.code(), "copy " + std::to_string(l.objects[i].mirror) + " of stripe " +
                                    std::to_string(stripe) + " (OST " +
                                    std::to_string(l.objects[i].ost) + "): " + st.message());
    }
  }
  return first;
}

}  // namespace sfs::client
