// stripefs.kv: the KV-cache tier (libsfs-kv, client/lib/kv.h) for Python.
//
// Blocks go in and out through the buffer protocol: put sends from the
// object's memory and get_into receives the OSS's reply straight into it
// (a bytearray, a numpy array, a torch tensor's .numpy()): no copy here.
// Network calls run with the GIL released; a miss is False, never an error;
// errors are OSError(errno, ...), as in the rest of the binding.
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "client/lib/kv.h"
#include "client/lib/kv_keys.h"
#include "client/python/binding.h"

namespace sfs::python {
namespace {

namespace ckv = client::kv;

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// Keys (and groups) as owned strings, with BlockIds over them.
struct Ids {
  std::vector<std::string> keys, groups;
  std::vector<ckv::BlockId> ids;
};

Ids MakeIds(const std::vector<py::bytes>& keys, const std::optional<std::vector<py::bytes>>& groups) {
  if (groups && groups->size() != keys.size()) {
    throw py::value_error("groups must have one entry per key");
  }
  Ids out;
  out.keys.reserve(keys.size());
  out.groups.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    out.keys.push_back(std::string(keys[i]));
    out.groups.push_back(groups ? std::string((*groups)[i]) : std::string());
  }
  for (size_t i = 0; i < keys.size(); ++i) out.ids.push_back({out.keys[i], out.groups[i]});
  return out;
}

class KvNamespace {
 public:
  KvNamespace(std::shared_ptr<ckv::KvClient> c, std::unique_ptr<ckv::KvNamespace> ns)
      : c_(std::move(c)), ns_(std::move(ns)) {}
  ~KvNamespace() {
    if (getpid() != pid_) {  // a fork child: never join the parent's threads
      new std::unique_ptr<ckv::KvNamespace>(std::move(ns_));
      Abandon(c_);
    }
  }

  void Put(const py::bytes& key, const py::buffer& data, const py::bytes& group, uint32_t ttl_s) {
    RequireOwner(pid_);
    std::string k = key, g = group;
    BufferView view(data, false);
    Check(Blocking([&] { return ns_->Put({k, g}, {view.data(), view.size()}, ttl_s); }));
  }

  bool GetInto(const py::bytes& key, const py::buffer& buf, const py::bytes& group,
               uint32_t lease_ms) {
    RequireOwner(pid_);
    std::string k = key, g = group;
    BufferView view(buf, true);
    return Check(Blocking([&] { return ns_->GetInto({k, g}, {view.data(), view.size()}, lease_ms); }));
  }

  std::vector<bool> Exists(const std::vector<py::bytes>& keys,
                           const std::optional<std::vector<py::bytes>>& groups, uint32_t lease_ms) {
    RequireOwner(pid_);
    Ids ids = MakeIds(keys, groups);
    return Check(Blocking([&] { return ns_->Exists(ids.ids, lease_ms); }));
  }

  std::vector<bool> Remove(const std::vector<py::bytes>& keys,
                           const std::optional<std::vector<py::bytes>>& groups) {
    RequireOwner(pid_);
    Ids ids = MakeIds(keys, groups);
    return Check(Blocking([&] { return ns_->Remove(ids.ids); }));
  }

  std::vector<bool> Pin(const std::vector<py::bytes>& keys, uint32_t pin_ms,
                        const std::optional<std::vector<py::bytes>>& groups) {
    RequireOwner(pid_);
    Ids ids = MakeIds(keys, groups);
    return Check(Blocking([&] { return ns_->Pin(ids.ids, pin_ms); }));
  }

  // Raises the first item's error after every item finished.
  void MultiPut(const std::vector<py::bytes>& keys, const std::vector<py::buffer>& data,
                const std::optional<std::vector<py::bytes>>& groups, uint32_t ttl_s) {
    RequireOwner(pid_);
    if (data.size() != keys.size()) throw py::value_error("one data buffer per key");
    Ids ids = MakeIds(keys, groups);
    std::vector<std::unique_ptr<BufferView>> views;
    std::vector<ckv::KvNamespace::PutItem> items;
    for (size_t i = 0; i < keys.size(); ++i) {
      views.push_back(std::make_unique<BufferView>(data[i], false));
      items.push_back({ids.ids[i], {views.back()->data(), views.back()->size()}});
    }
    std::vector<Status> r = Blocking([&] { return ns_->MultiPut(items, ttl_s); });
    for (const Status& st : r) Check(st);
  }

  std::vector<bool> MultiGet(const std::vector<py::bytes>& keys,
                             const std::vector<py::buffer>& bufs,
                             const std::optional<std::vector<py::bytes>>& groups,
                             uint32_t lease_ms) {
    RequireOwner(pid_);
    if (bufs.size() != keys.size()) throw py::value_error("one buffer per key");
    Ids ids = MakeIds(keys, groups);
    std::vector<std::unique_ptr<BufferView>> views;
    std::vector<ckv::KvNamespace::GetItem> items;
    for (size_t i = 0; i < keys.size(); ++i) {
      views.push_back(std::make_unique<BufferView>(bufs[i], true));
      items.push_back({ids.ids[i], {views.back()->data(), views.back()->size()}});
    }
    std::vector<Result<bool>> r = Blocking([&] { return ns_->MultiGet(items, lease_ms); });
    std::vector<bool> out;
    for (Result<bool>& x : r) out.push_back(Check(std::move(x)));
    return out;
  }

  const std::string& name() const { return ns_->name(); }
  uint64_t block_size() const { return ns_->block_size(); }

 private:
  const pid_t pid_ = getpid();
  std::shared_ptr<ckv::KvClient> c_;  // outlives ns_
  std::unique_ptr<ckv::KvNamespace> ns_;
};

class KvClient {
 public:
  explicit KvClient(std::shared_ptr<ckv::KvClient> c) : c_(std::move(c)) {}
  ~KvClient() {
    if (getpid() != pid_) Abandon(c_);
  }
  std::shared_ptr<KvNamespace> Namespace(const std::string& name, uint64_t block_size) {
    RequireOwner(pid_);
    auto ns = Check(Blocking([&] { return c_->Open(name, block_size); }));
    return std::make_shared<KvNamespace>(c_, std::move(ns));
  }
  std::vector<uint32_t> osts() const { return c_->osts(); }
  uint32_t Place(const py::bytes& key, const py::bytes& group) const {
    std::string k = key, g = group;
    return c_->Place({k, g});
  }

 private:
  const pid_t pid_ = getpid();
  std::shared_ptr<ckv::KvClient> c_;
};

std::shared_ptr<KvClient> Connect(const std::string& address, double rpc_timeout,
                                  double connect_timeout, const std::string& transport,
                                  const py::bytes& capability, int max_inflight, bool busy_poll) {
  ckv::KvOptions o;
  o.mds_address = address;
  o.rpc_timeout = Ms(rpc_timeout);
  o.connect_timeout = Ms(connect_timeout);
  o.transport = Check(client::ParseTransport(transport));
  o.capability = std::string(capability);
  o.max_inflight = max_inflight;
  o.busy_poll = busy_poll;
  std::unique_ptr<ckv::KvClient> c = Check(Blocking([&] { return ckv::KvClient::Connect(o); }));
  return std::make_shared<KvClient>(std::shared_ptr<ckv::KvClient>(std::move(c)));
}

std::vector<uint32_t> Tokens(const std::vector<int64_t>& in) {
  std::vector<uint32_t> out;
  out.reserve(in.size());
  for (int64_t t : in) {
    if (t < 0 || t > 0xffffffffll) throw py::value_error("token ids must be 0 .. 2**32-1");
    out.push_back(static_cast<uint32_t>(t));
  }
  return out;
}

std::vector<py::bytes> ChainKeys(const std::vector<int64_t>& tokens, uint32_t chunk_tokens,
                                 const py::bytes& salt, const std::string& model,
                                 const std::string& layout, const std::optional<py::bytes>& parent) {
  if (chunk_tokens == 0) throw py::value_error("chunk_tokens must be > 0");
  std::string s = salt;
  ckv::ChainSpec spec{s, model, layout, chunk_tokens};
  ckv::Hash p{};
  if (parent) {
    std::string raw = *parent;
    if (raw.size() != ckv::kHashSize) throw py::value_error("parent must be 32 bytes");
    std::memcpy(p.data(), raw.data(), raw.size());
  }
  std::vector<uint32_t> t = Tokens(tokens);
  std::vector<ckv::Hash> keys = ckv::ChainKeys(spec, t, p);
  std::vector<py::bytes> out;
  for (const ckv::Hash& h : keys) out.emplace_back(std::string(ckv::AsBytes(h)));
  return out;
}

py::bytes BlockKey(const py::bytes& chunk, uint32_t part) {
  std::string raw = chunk;
  if (raw.size() != ckv::kHashSize) throw py::value_error("chunk key must be 32 bytes");
  ckv::Hash h;
  std::memcpy(h.data(), raw.data(), raw.size());
  return py::bytes(ckv::BlockKey(h, part));
}

}  // namespace

void BindKv(py::module_& parent) {
  py::module_ m = parent.def_submodule("kv", "The KV-cache tier (docs/kv.md).");
  py::class_<KvNamespace, std::shared_ptr<KvNamespace>>(
      m, "Namespace", "Fixed-size blocks by key; see docs/kv.md.")
      .def_property_readonly("name", &KvNamespace::name)
      .def_property_readonly("block_size", &KvNamespace::block_size)
      .def("put", &KvNamespace::Put, py::arg("key"), py::arg("data"), py::kw_only(),
           py::arg("group") = py::bytes(), py::arg("ttl_s") = 0,
           "Stores data (exactly block_size bytes, any buffer) under key.")
      .def("get_into", &KvNamespace::GetInto, py::arg("key"), py::arg("buffer"), py::kw_only(),
           py::arg("group") = py::bytes(), py::arg("lease_ms") = 0,
           "Reads the block into a writable buffer of block_size bytes, without a copy: True "
           "on a hit, False on a miss.")
      .def("exists", &KvNamespace::Exists, py::arg("keys"), py::kw_only(),
           py::arg("groups") = py::none(), py::arg("lease_ms") = 0,
           "One bool per key; lease_ms > 0 pins the ones found.")
      .def("remove", &KvNamespace::Remove, py::arg("keys"), py::kw_only(),
           py::arg("groups") = py::none())
      .def("pin", &KvNamespace::Pin, py::arg("keys"), py::arg("pin_ms"), py::kw_only(),
           py::arg("groups") = py::none(), "pin_ms 0 unpins; at most one hour.")
      .def("multi_put", &KvNamespace::MultiPut, py::arg("keys"), py::arg("data"), py::kw_only(),
           py::arg("groups") = py::none(), py::arg("ttl_s") = 0)
      .def("multi_get", &KvNamespace::MultiGet, py::arg("keys"), py::arg("buffers"),
           py::kw_only(), py::arg("groups") = py::none(), py::arg("lease_ms") = 0);
  py::class_<KvClient, std::shared_ptr<KvClient>>(m, "Client", "A connection to the KV tier.")
      .def("namespace", &KvClient::Namespace, py::arg("name"), py::arg("block_size"),
           "Declares (or opens) a namespace of fixed-size blocks on every OST.")
      .def_property_readonly("osts", &KvClient::osts)
      .def("place", &KvClient::Place, py::arg("key"), py::arg("group") = py::bytes(),
           "The OST index that holds the block.");
  m.def("connect", &Connect, py::arg("address"), py::kw_only(), py::arg("rpc_timeout") = 10.0,
        py::arg("connect_timeout") = 5.0, py::arg("transport") = "auto",
        py::arg("capability") = py::bytes(), py::arg("max_inflight") = 64,
        py::arg("busy_poll") = true,
        "Connects to the MDS at 'host:port' once, for the OST map. busy_poll: a get "
        "waits awake up to 50 us for its reply before sleeping (off where more "
        "processes get at once than there are cores).");
  m.def("chain_keys", &ChainKeys, py::arg("tokens"), py::kw_only(),
        py::arg("chunk_tokens") = 256, py::arg("salt") = py::bytes(), py::arg("model") = "",
        py::arg("layout") = "", py::arg("parent") = py::none(),
        "SHA-256 chain keys (32 bytes) of every full chunk of token ids.");
  m.def("block_key", &BlockKey, py::arg("chunk_key"), py::arg("part"),
        "The key of one part (layer, shard) of a chunk: chunk_key + part as 4 bytes big-endian.");
}

}  // namespace sfs::python
