// libFuzzer target: MdsService over a real LevelDB namespace in a scratch
// directory (wired as mds/main.cc does, minus the network and background
// threads), fed a fuzzed MdsRequest payload. Every reply must parse as an
// MdsResponse. The namespace persists across inputs, so sequences of
// mutations are explored too.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "mds.pb.h"
#include "mds/namespace/kv_store.h"
#include "mds/namespace/namespace.h"
#include "mds/namespace/ost_registry.h"
#include "mds/service/mds_service.h"

namespace {

using namespace sfs::mds;

MdsService& Service() {
  static MdsService* service = [] {
    auto store = OpenLevelDbStore(sfs::fuzz::ScratchDir("mds-fuzz"));
    if (!store.ok()) std::abort();
    KvStore* kv = store->release();
    auto* osts = new OstRegistry(kv);
    if (!osts->Load(NowMs()).ok()) std::abort();
    std::vector<OstReport> reports(4);
    for (size_t i = 0; i < reports.size(); ++i) {
      reports[i].uuid = "fuzz-ost-" + std::to_string(i);
      reports[i].stats.total_bytes = uint64_t{1} << 40;
      reports[i].stats.free_bytes = reports[i].stats.avail_bytes = uint64_t{1} << 39;
    }
    if (!osts->Register("127.0.0.1:9", reports, NowMs()).ok()) std::abort();
    auto* ns = new Namespace(kv, osts, NamespaceOptions{});
    if (!ns->Start(NowMs()).ok()) std::abort();
    return new MdsService(ns, osts);
  }();
  return *service;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string payload(reinterpret_cast<const char*>(data), size);
  sfs::proto::MdsResponse resp;
  if (!resp.ParseFromString(Service().HandlePayload(payload))) std::abort();
  return 0;
}
