// The C API of libsfs-kv over kv.h (kv_c.h).
#include "client/lib/kv_c.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/lib/kv.h"
#include "client/lib/kv_keys.h"

using sfs::Result;
using sfs::Status;
using sfs::client::kv::BlockId;
using sfs::client::kv::KvClient;
using sfs::client::kv::KvNamespace;

struct sfs_kv {
  std::unique_ptr<KvClient> c;
};
struct sfs_kv_ns {
  std::unique_ptr<KvNamespace> ns;
};

namespace {

thread_local std::string t_error;

int Fail(const Status& st) {
  t_error = st.ToString();
  return -st.code();
}

BlockId Id(const sfs_kv_id& id) {
  return {{static_cast<const char*>(id.key), id.key_len},
          {id.group == nullptr ? "" : static_cast<const char*>(id.group), id.group_len}};
}

std::vector<BlockId> Ids(const sfs_kv_id* ids, size_t n) {
  std::vector<BlockId> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(Id(ids[i]));
  return out;
}

std::vector<KvNamespace::PutItem> PutItems(const KvNamespace& ns, const sfs_kv_id* ids,
                                           const void* const* data, size_t n) {
  std::vector<KvNamespace::PutItem> items;
  items.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    items.push_back({Id(ids[i]), {static_cast<const uint8_t*>(data[i]), ns.block_size()}});
  }
  return items;
}

std::vector<KvNamespace::GetItem> GetItems(const KvNamespace& ns, const sfs_kv_id* ids,
                                           void* const* bufs, size_t n) {
  std::vector<KvNamespace::GetItem> items;
  items.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    items.push_back({Id(ids[i]), {static_cast<uint8_t*>(bufs[i]), ns.block_size()}});
  }
  return items;
}

void PutResults(const std::vector<Status>& r, int* results) {
  for (size_t i = 0; i < r.size(); ++i) results[i] = r[i].ok() ? 0 : Fail(r[i]);
}

void GetResults(const std::vector<Result<bool>>& r, int* results) {
  for (size_t i = 0; i < r.size(); ++i) results[i] = !r[i].ok() ? Fail(r[i].status()) : (*r[i] ? 1 : 0);
}

}  // namespace

extern "C" {

int sfs_kv_connect(const char* mds_address, sfs_kv** out) {
  if (mds_address == nullptr || out == nullptr) return Fail(Status(EINVAL, "null argument"));
  sfs::client::kv::KvOptions o;
  o.mds_address = mds_address;
  Result<std::unique_ptr<KvClient>> c = KvClient::Connect(o);
  if (!c.ok()) return Fail(c.status());
  *out = new sfs_kv{std::move(*c)};
  return 0;
}

void sfs_kv_close(sfs_kv* kv) { delete kv; }

int sfs_kv_open(sfs_kv* kv, const char* name, uint64_t block_size, sfs_kv_ns** out) {
  if (kv == nullptr || name == nullptr || out == nullptr) return Fail(Status(EINVAL, "null argument"));
  Result<std::unique_ptr<KvNamespace>> ns = kv->c->Open(name, block_size);
  if (!ns.ok()) return Fail(ns.status());
  *out = new sfs_kv_ns{std::move(*ns)};
  return 0;
}

void sfs_kv_ns_close(sfs_kv_ns* ns) { delete ns; }

int sfs_kv_put(sfs_kv_ns* ns, const sfs_kv_id* id, const void* data, size_t len, uint32_t ttl_s) {
  if (ns == nullptr || id == nullptr || data == nullptr) return Fail(Status(EINVAL, "null argument"));
  Status st = ns->ns->Put(Id(*id), {static_cast<const uint8_t*>(data), len}, ttl_s);
  return st.ok() ? 0 : Fail(st);
}

int sfs_kv_get_into(sfs_kv_ns* ns, const sfs_kv_id* id, void* buf, size_t len, uint32_t lease_ms) {
  if (ns == nullptr || id == nullptr || buf == nullptr) return Fail(Status(EINVAL, "null argument"));
  Result<bool> hit = ns->ns->GetInto(Id(*id), {static_cast<uint8_t*>(buf), len}, lease_ms);
  if (!hit.ok()) return Fail(hit.status());
  return *hit ? 1 : 0;
}

int sfs_kv_exists(sfs_kv_ns* ns, const sfs_kv_id* ids, size_t n, uint8_t* found, uint32_t lease_ms) {
  if (ns == nullptr || (n > 0 && (ids == nullptr || found == nullptr))) {
    return Fail(Status(EINVAL, "null argument"));
  }
  std::vector<BlockId> v = Ids(ids, n);
  Result<std::vector<bool>> r = ns->ns->Exists(v, lease_ms);
  if (!r.ok()) return Fail(r.status());
  for (size_t i = 0; i < n; ++i) found[i] = (*r)[i] ? 1 : 0;
  return 0;
}

int sfs_kv_remove(sfs_kv_ns* ns, const sfs_kv_id* ids, size_t n, uint8_t* removed) {
  if (ns == nullptr || (n > 0 && ids == nullptr)) return Fail(Status(EINVAL, "null argument"));
  std::vector<BlockId> v = Ids(ids, n);
  Result<std::vector<bool>> r = ns->ns->Remove(v);
  if (!r.ok()) return Fail(r.status());
  for (size_t i = 0; removed != nullptr && i < n; ++i) removed[i] = (*r)[i] ? 1 : 0;
  return 0;
}

int sfs_kv_pin(sfs_kv_ns* ns, const sfs_kv_id* ids, size_t n, uint32_t pin_ms) {
  if (ns == nullptr || (n > 0 && ids == nullptr)) return Fail(Status(EINVAL, "null argument"));
  std::vector<BlockId> v = Ids(ids, n);
  Result<std::vector<bool>> r = ns->ns->Pin(v, pin_ms);
  return r.ok() ? 0 : Fail(r.status());
}

int sfs_kv_multi_put(sfs_kv_ns* ns, const sfs_kv_id* ids, const void* const* data, size_t n,
                     uint32_t ttl_s, int* results) {
  if (ns == nullptr || (n > 0 && (ids == nullptr || data == nullptr || results == nullptr))) {
    return Fail(Status(EINVAL, "null argument"));
  }
  PutResults(ns->ns->MultiPut(PutItems(*ns->ns, ids, data, n), ttl_s), results);
  return 0;
}

int sfs_kv_multi_get(sfs_kv_ns* ns, const sfs_kv_id* ids, void* const* bufs, size_t n,
                     uint32_t lease_ms, int* results) {
  if (ns == nullptr || (n > 0 && (ids == nullptr || bufs == nullptr || results == nullptr))) {
    return Fail(Status(EINVAL, "null argument"));
  }
  GetResults(ns->ns->MultiGet(GetItems(*ns->ns, ids, bufs, n), lease_ms), results);
  return 0;
}

int sfs_kv_multi_put_async(sfs_kv_ns* ns, const sfs_kv_id* ids, const void* const* data, size_t n,
                           uint32_t ttl_s, sfs_kv_done done, void* arg) {
  if (ns == nullptr || done == nullptr || (n > 0 && (ids == nullptr || data == nullptr))) {
    return Fail(Status(EINVAL, "null argument"));
  }
  ns->ns->MultiPutAsync(PutItems(*ns->ns, ids, data, n), ttl_s,
                        [done, arg](std::vector<Status> r) {
                          std::vector<int> results(r.size());
                          PutResults(r, results.data());
                          done(arg, results.data(), results.size());
                        });
  return 0;
}

int sfs_kv_multi_get_async(sfs_kv_ns* ns, const sfs_kv_id* ids, void* const* bufs, size_t n,
                           uint32_t lease_ms, sfs_kv_done done, void* arg) {
  if (ns == nullptr || done == nullptr || (n > 0 && (ids == nullptr || bufs == nullptr))) {
    return Fail(Status(EINVAL, "null argument"));
  }
  ns->ns->MultiGetAsync(GetItems(*ns->ns, ids, bufs, n), lease_ms,
                        [done, arg](std::vector<Result<bool>> r) {
                          std::vector<int> results(r.size());
                          GetResults(r, results.data());
                          done(arg, results.data(), results.size());
                        });
  return 0;
}

size_t sfs_kv_chain_keys(const void* salt, size_t salt_len, const char* model, const char* layout,
                         const uint32_t* tokens, size_t n_tokens, uint32_t chunk_tokens,
                         uint8_t* out, size_t max_keys) {
  if (chunk_tokens == 0 || (n_tokens > 0 && tokens == nullptr)) return 0;
  sfs::client::kv::ChainSpec spec;
  spec.salt = {salt == nullptr ? "" : static_cast<const char*>(salt), salt_len};
  spec.model = model == nullptr ? "" : model;
  spec.layout = layout == nullptr ? "" : layout;
  spec.chunk_tokens = chunk_tokens;
  std::vector<sfs::client::kv::Hash> keys = sfs::client::kv::ChainKeys(spec, {tokens, n_tokens});
  for (size_t i = 0; out != nullptr && i < keys.size() && i < max_keys; ++i) {
    std::memcpy(out + 32 * i, keys[i].data(), 32);
  }
  return keys.size();
}

const char* sfs_kv_last_error(void) { return t_error.c_str(); }

}  // extern "C"
