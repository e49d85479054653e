// CallService: one request to an OssService in-process, as the RPC server
// would hand it over (Handle, no network). Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "oss.pb.h"
#include "oss/service/oss_service.h"

namespace sfs::oss {

// The parsed reply; its bulk goes to *reply_bulk when given.
inline proto::OssResponse CallService(OssService& service, const proto::OssRequest& req,
                                      std::vector<uint8_t> bulk = {},
                                      std::vector<uint8_t>* reply_bulk = nullptr) {
  rpc::Request r;
  r.service = rpc::kServiceOss;
  req.SerializeToString(&r.payload);
  r.bulk = std::move(bulk);
  rpc::Reply reply;
  service.Handle(r, &reply);
  proto::OssResponse resp;
  EXPECT_TRUE(resp.ParseFromString(reply.payload));
  if (reply_bulk != nullptr) *reply_bulk = std::move(reply.bulk);
  return resp;
}

}  // namespace sfs::oss
