// The KV-cache tier's ops of OssService (oss.proto Kv*Req, docs/kv.md): the
// request's fields checked and handed to the OST's KvStore, the outcome
// packed into OssResponse.kv. The tenant is decided before (OssService::
// KvTenant): these functions never look at credentials.
#pragma once

#include <cstdint>

#include "common/rpc/rpc.h"
#include "common/status.h"
#include "oss/kv/kv_store.h"

namespace sfs::proto {
class KvGetReq;
class OssRequest;
class OssResponse;
}  // namespace sfs::proto

namespace sfs::oss {

// True iff op (an OssRequest::OpCase) is one of the kv ops.
bool IsKvOp(int op);

// Runs a kv op for tenant on store. A get's block goes as reply's file bulk
// when the server can send one (rreq.file_bulk_ok: TCP), unread here, its
// frame crc the one recorded at the put (the client's check is the check);
// else in reply's bulk, read and checked here (pooled when rreq has a pool,
// its crc then given as reply->bulk_value, so the frame crc costs no second
// pass). A miss is OK with found false.
Status DispatchKv(kv::KvStore& store, uint32_t tenant, const proto::OssRequest& req,
                  const rpc::Request& rreq, proto::OssResponse* resp, rpc::Reply* reply);

// A get in two steps (DispatchKv's get is the two in turn), so that the
// server's I/O thread can look up and open a block once and answer from that
// open when it waits on no disk (AnswersWithoutDisk), or else leave the whole
// get to a worker.
// OpenGet: the request's checks, then KvStore::Open (fd -1: a miss; else the
// caller owns the fd).
Result<kv::KvStore::OpenBlock> OpenGet(kv::KvStore& store, uint32_t tenant,
                                       const proto::KvGetReq& g);
// True iff AnswerGet of b reads nothing from the disk: a miss, or a block
// all in the page cache that rreq's server can send from its file.
bool AnswersWithoutDisk(const kv::KvStore::OpenBlock& b, const rpc::Request& rreq);
// The reply to a get whose block OpenGet opened (b's fd is closed, or owned
// by reply's file bulk, when it returns).
Status AnswerGet(kv::KvStore& store, uint32_t tenant, const proto::KvGetReq& g,
                 kv::KvStore::OpenBlock b, const rpc::Request& rreq, proto::OssResponse* resp,
                 rpc::Reply* reply);

}  // namespace sfs::oss
