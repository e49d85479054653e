// libFuzzer target: OssService::Handle over a real file-backed store in a
// scratch directory, fed a fuzzed payload and bulk (layout in fuzz_util.h).
// Every reply must parse as an OssResponse; a read's reply bulk must be
// exactly the requested length.
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "fuzz/fuzz_util.h"
#include "oss.pb.h"
#include "oss/service/oss_service.h"
#include "oss/store/object_store.h"

namespace {

sfs::oss::OssService& Service() {
  static sfs::oss::OssService* service = [] {
    auto store = sfs::oss::OpenFileObjectStore(sfs::fuzz::ScratchDir("oss-fuzz") + "/ost0");
    if (!store.ok()) std::abort();
    auto* s = new sfs::oss::OssService;
    s->SetTargets({{0, store->release()}});
    return s;
  }();
  return *service;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sfs::rpc::Request req = sfs::fuzz::SplitRequest(data, size, sfs::rpc::kServiceOss);
  sfs::proto::OssRequest parsed;
  bool is_read = parsed.ParseFromString(req.payload) && parsed.has_read();
  sfs::rpc::Reply reply;
  Service().Handle(req, &reply);
  sfs::proto::OssResponse resp;
  if (!resp.ParseFromString(reply.payload)) std::abort();
  if (is_read && resp.status().code() == 0 && reply.bulk.size() != parsed.read().length()) {
    std::abort();
  }
  return 0;
}
