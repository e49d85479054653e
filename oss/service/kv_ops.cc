// Kv ops of OssService: field checks, then the KvStore call (kv_ops.h).
#include "oss/service/kv_ops.h"

#include <string>
#include <vector>

#include "oss.pb.h"

namespace sfs::oss {
namespace {

using proto::OssRequest;
using proto::OssResponse;

// The keys of a batch, refused before they are copied when there are too many.
Result<std::vector<std::string>> Keys(const google::protobuf::RepeatedPtrField<std::string>& in) {
  if (in.size() > static_cast<int>(kv::KvStore::kMaxBatch)) {
    return Status::Errno(EINVAL, "more than " + std::to_string(kv::KvStore::kMaxBatch) +
                                     " kv keys in one call");
  }
  return std::vector<std::string>(in.begin(), in.end());
}

void SetFound(const std::vector<bool>& found, OssResponse* resp) {
  proto::KvResp* out = resp->mutable_kv();
  for (bool f : found) out->add_found(f);
}

}  // namespace

Result<kv::KvStore::OpenBlock> OpenGet(kv::KvStore& store, uint32_t tenant,
                                       const proto::KvGetReq& g) {
  SFS_ASSIGN_OR_RETURN(uint64_t size, store.BlockSize(tenant, g.ns()));
  if (g.block_size() != size) {
    return Status::Errno(EINVAL, "kv get of " + std::to_string(g.block_size()) +
                                     "-byte blocks; namespace " + g.ns() + " has " +
                                     std::to_string(size));
  }
  return store.Open(tenant, g.ns(), g.key(), g.lease_ms());
}

bool AnswersWithoutDisk(const kv::KvStore::OpenBlock& b, const rpc::Request& rreq) {
  return b.fd < 0 || (rreq.file_bulk_ok && b.cached);
}

Status AnswerGet(kv::KvStore& store, uint32_t tenant, const proto::KvGetReq& g,
                 kv::KvStore::OpenBlock b, const rpc::Request& rreq, OssResponse* resp,
                 rpc::Reply* reply) {
  const uint64_t size = g.block_size();  // OpenGet checked it
  if (b.fd < 0) {
    resp->mutable_kv()->add_found(false);
    return Status::Ok();
  }
  if (rreq.file_bulk_ok && b.cached) {
    // Sent from the page cache by the server, unread here: no copy, no pass
    // over the bytes; the frame crc is the one recorded at the put, which
    // the client checks.
    reply->file_bulk = std::make_shared<rpc::FileBulk>(b.fd, 0, static_cast<uint32_t>(size), b.crc);
    resp->mutable_kv()->add_found(true);
    return Status::Ok();
  }
  // Not all in memory (the server's I/O thread must not wait on the disk for
  // it), or no file bulk here: read and checked on this thread.
  std::span<uint8_t> dest;
  if (rreq.pool != nullptr) {
    reply->pooled_bulk = rreq.pool->Get(size);
    dest = reply->pooled_bulk.span();
  } else {
    reply->bulk.resize(size);
    dest = reply->bulk;
  }
  uint32_t crc = 0;
  Result<bool> hit = store.ReadOpened(tenant, g.ns(), g.key(), b, dest, &crc);
  if (!hit.ok() || !*hit) {
    reply->pooled_bulk.Reset();
    reply->bulk.clear();
    if (!hit.ok()) return hit.status();
    resp->mutable_kv()->add_found(false);
    return Status::Ok();
  }
  if (!reply->pooled_bulk.empty()) reply->bulk_value = crc;
  resp->mutable_kv()->add_found(true);
  return Status::Ok();
}

bool IsKvOp(int op) {
  switch (op) {
    case OssRequest::kKvDeclare:
    case OssRequest::kKvPut:
    case OssRequest::kKvGet:
    case OssRequest::kKvExists:
    case OssRequest::kKvRemove:
    case OssRequest::kKvPin: return true;
    default: return false;
  }
}

Status DispatchKv(kv::KvStore& store, uint32_t tenant, const OssRequest& req,
                  const rpc::Request& rreq, OssResponse* resp, rpc::Reply* reply) {
  switch (req.op_case()) {
    case OssRequest::kKvDeclare:
      return store.Declare(tenant, req.kv_declare().ns(), req.kv_declare().block_size());
    case OssRequest::kKvPut: {
      const proto::KvPutReq& p = req.kv_put();
      return store.Put(tenant, p.ns(), p.key(), p.group(), rreq.bulk_bytes(), p.ttl_s());
    }
    case OssRequest::kKvGet: {
      SFS_ASSIGN_OR_RETURN(kv::KvStore::OpenBlock b, OpenGet(store, tenant, req.kv_get()));
      return AnswerGet(store, tenant, req.kv_get(), b, rreq, resp, reply);
    }
    case OssRequest::kKvExists: {
      SFS_ASSIGN_OR_RETURN(std::vector<std::string> keys, Keys(req.kv_exists().keys()));
      SFS_ASSIGN_OR_RETURN(std::vector<bool> found,
                           store.Exists(tenant, req.kv_exists().ns(), keys,
                                        req.kv_exists().lease_ms()));
      SetFound(found, resp);
      return Status::Ok();
    }
    case OssRequest::kKvRemove: {
      SFS_ASSIGN_OR_RETURN(std::vector<std::string> keys, Keys(req.kv_remove().keys()));
      SFS_ASSIGN_OR_RETURN(std::vector<bool> found, store.Remove(tenant, req.kv_remove().ns(), keys));
      SetFound(found, resp);
      return Status::Ok();
    }
    case OssRequest::kKvPin: {
      SFS_ASSIGN_OR_RETURN(std::vector<std::string> keys, Keys(req.kv_pin().keys()));
      SFS_ASSIGN_OR_RETURN(std::vector<bool> found,
                           store.Pin(tenant, req.kv_pin().ns(), keys, req.kv_pin().pin_ms()));
      SetFound(found, resp);
      return Status::Ok();
    }
    default: break;
  }
  return Status::Errno(EPROTO, "not a kv op");
}

}  // namespace sfs::oss
