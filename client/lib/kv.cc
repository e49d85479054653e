// libsfs-kv: placement, the kv RPCs and their batching (kv.h).
#include "client/lib/kv.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "client/lib/channel_factory.h"
#include "client/lib/mds_client.h"
#include "client/lib/oss_pool.h"
#include "common/log.h"
#include "common/rpc/rpc.h"
#include "oss.pb.h"

namespace sfs::client::kv {
namespace {

constexpr size_t kMaxKey = 64;
constexpr size_t kMaxBatch = 4096;  // KvStore::kMaxBatch

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

Status CheckId(const BlockId& id) {
  if (id.key.empty() || id.key.size() > kMaxKey) return Status(EINVAL, "kv key of 0 or over 64 bytes");
  if (id.group.size() > kMaxKey) return Status(EINVAL, "kv group over 64 bytes");
  return Status::Ok();
}

// An item of a batch: its id, and its bytes the namespace's block size.
Status CheckBlock(const BlockId& id, size_t bytes, const char* what, const std::string& ns,
                  uint64_t block_size) {
  SFS_RETURN_IF_ERROR(CheckId(id));
  if (bytes == block_size) return Status::Ok();
  return Status(EINVAL, what + std::to_string(bytes) + " bytes; namespace " + ns + " has " +
                            std::to_string(block_size) + "-byte blocks");
}

// A transport failure that a read takes as a miss: the OSS is gone or hung.
bool Unreachable(int code) {
  return code == ECONNREFUSED || code == ENOTCONN || code == ETIMEDOUT || code == ECONNRESET ||
         code == EPIPE || code == EHOSTUNREACH || code == ENETUNREACH;
}

// Threads that run jobs, started as needed and kept for the next one, up to
// kMaxThreads; past that, jobs queue. The destructor runs what is queued,
// then joins. A job must not wait for a job of the same pool (it might be
// queued behind it): KvClient::Impl keeps one pool for the shares of a
// MultiGet/MultiPut past the caller's own (PerOst) and another for the
// async calls, which wait for shares.
class KeptThreads {
 public:
  static constexpr size_t kMaxThreads = 64;
  ~KeptThreads() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void Run(std::function<void()> job) {
    std::unique_lock<std::mutex> l(mu_);
    jobs_.push_back(std::move(job));
    if (idle_ == 0 && threads_.size() < kMaxThreads) {
      threads_.emplace_back([this] { Loop(); });
    } else {
      l.unlock();
      cv_.notify_one();
    }
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;  // stop_
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      job();
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // GUARDED_BY(mu_)
  std::vector<std::thread> threads_;        // GUARDED_BY(mu_)
  size_t idle_ = 0;                         // GUARDED_BY(mu_)
  bool stop_ = false;                       // GUARDED_BY(mu_)
};

uint64_t NewClientId() {
  std::random_device rd;
  uint64_t id = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return id == 0 ? 1 : id;
}

}  // namespace

class KvClient::Impl {
 public:
  KvOptions opts;
  // Teardown in reverse: channels before the IoContext.
  std::unique_ptr<rpc::IoContext> io;
  std::unique_ptr<ChannelFactory> channels;
  std::unique_ptr<MdsClient> mds;
  std::unique_ptr<OssPool> pool;
  std::vector<uint32_t> osts;
  // Destroyed (drained) first to last: async calls use share threads.
  KeptThreads share_threads;  // idle whenever no MultiGet/MultiPut runs
  KeptThreads async_threads;  // MultiGetAsync/MultiPutAsync

  uint32_t Place(const BlockId& id) const {
    const uint64_t h = Fnv1a(id.group.empty() ? id.key : id.group);
    uint32_t best = osts.front();
    uint64_t best_score = 0;
    for (uint32_t ost : osts) {  // rendezvous: the highest score wins
      uint64_t score = Mix(h ^ Mix(ost + 0x9e3779b97f4a7c15ull));
      if (score >= best_score) {
        best_score = score;
        best = ost;
      }
    }
    return best;
  }

  // One kv request in flight.
  struct Call {
    uint32_t ost = 0;
    std::string payload;  // kept to send again after a re-declare
    std::span<const uint8_t> out;
    std::span<uint8_t> in;
    std::shared_ptr<rpc::PendingCall> pending;
    Status start_error;
  };

  template <typename Fill>
  std::string Payload(uint32_t ost, Fill fill) {
    proto::OssRequest r;
    r.set_ost(ost);
    r.set_client_id(mds->client_id());
    r.set_xid(mds->NextXid());
    if (!opts.capability.empty()) r.add_capabilities(opts.capability);
    fill(r);
    return r.SerializeAsString();
  }

  void Start(Call* c) {
    Result<rpc::Channel*> ch = pool->ChannelFor(c->ost);
    if (!ch.ok()) {
      c->start_error = ch.status();
      return;
    }
    rpc::CallOptions o;
    o.timeout = opts.rpc_timeout;
    o.fail_fast = true;  // a cache does not wait for a dead OSS
    // A get (it receives a block) is answered from the OSS's page cache on
    // its I/O thread: wait for it awake first (CallOptions::spin).
    o.spin = opts.busy_poll && !c->in.empty();
    c->pending = (*ch)->Start(rpc::kServiceOss, c->payload, c->out, c->in, o);
  }

  // The reply, or the transport's or the OSS's error.
  Result<proto::OssResponse> Finish(Call* c, size_t* bulk_len) {
    if (!c->start_error.ok()) return c->start_error;
    Result<rpc::Channel*> ch = pool->ChannelFor(c->ost);
    if (!ch.ok()) return ch.status();
    rpc::Response resp;
    SFS_RETURN_IF_ERROR((*ch)->Wait(c->pending, &resp));
    proto::OssResponse out;
    if (!out.ParseFromString(resp.payload)) return Status(EPROTO, "malformed OSS reply");
    if (out.status().code() != 0) return Status(out.status().code(), out.status().message());
    if (bulk_len != nullptr) *bulk_len = resp.bulk_len;
    return out;
  }

  Status Declare(uint32_t ost, const std::string& ns, uint64_t block_size) {
    Call c;
    c.ost = ost;
    c.payload = Payload(ost, [&](proto::OssRequest& r) {
      r.mutable_kv_declare()->set_ns(ns);
      r.mutable_kv_declare()->set_block_size(block_size);
    });
    Start(&c);
    return Finish(&c, nullptr).status();
  }

  // Finish, and on ENOENT (the OST forgot the namespace: it restarted)
  // declare it again and run the call once more.
  Result<proto::OssResponse> FinishRedeclaring(Call* c, const std::string& ns, uint64_t block_size,
                                               size_t* bulk_len) {
    Result<proto::OssResponse> r = Finish(c, bulk_len);
    if (r.ok() || r.status().code() != ENOENT) return r;
    SFS_RETURN_IF_ERROR(Declare(c->ost, ns, block_size));
    c->start_error = Status::Ok();
    Start(c);
    return Finish(c, bulk_len);
  }

  // Runs a batch's calls, items grouped by OST (by_ost: item indices),
  // each OST's share on a thread of its own (the caller's for the first, a
  // share thread for each other) with its part of max_inflight in
  // flight: make(i, &call) fills item i's call (its ost set), done(i, &call)
  // finishes it, in the share's order. A thread per OST because a thread
  // waits for its calls in order, on their socket: one thread waiting for
  // one OSS's reply leaves the others' replies unread, their socket buffers
  // fill and their senders stall, the more so on a new connection whose
  // buffers have not grown yet (docs/benchmarks.md, "KV-cache tier").
  template <typename Make, typename Done>
  void PerOst(const std::map<uint32_t, std::vector<size_t>>& by_ost, Make make, Done done) {
    if (by_ost.empty()) return;
    const size_t window =
        std::max<size_t>(1, static_cast<size_t>(opts.max_inflight) / by_ost.size());
    auto share = [&](uint32_t ost, const std::vector<size_t>& items) {
      std::deque<std::pair<size_t, Call>> flight;
      auto finish = [&] {
        done(flight.front().first, &flight.front().second);
        flight.pop_front();
      };
      for (size_t i : items) {
        Call call;
        call.ost = ost;
        make(i, &call);
        Start(&call);
        flight.emplace_back(i, std::move(call));
        if (flight.size() >= window) finish();
      }
      while (!flight.empty()) finish();
    };
    std::latch others(static_cast<std::ptrdiff_t>(by_ost.size() - 1));
    for (auto it = std::next(by_ost.begin()); it != by_ost.end(); ++it) {
      share_threads.Run([&, ost = it->first, items = &it->second] {
        share(ost, *items);
        others.count_down();
      });
    }
    share(by_ost.begin()->first, by_ost.begin()->second);
    others.wait();
  }
};

KvClient::KvClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KvClient::~KvClient() = default;

Result<std::unique_ptr<KvClient>> KvClient::Connect(const KvOptions& opts) {
  std::string host;
  uint16_t port = 0;
  if (!rpc::ParseAddress(opts.mds_address, &host, &port).ok()) {
    return Status(EINVAL, "bad MDS address '" + opts.mds_address + "'");
  }
  auto impl = std::make_unique<Impl>();
  impl->opts = opts;
  impl->opts.max_inflight = std::max(1, opts.max_inflight);
  impl->io = rpc::IoContext::Create(std::max(1, opts.io_threads));
  SFS_ASSIGN_OR_RETURN(impl->channels, ChannelFactory::Create(opts.transport, impl->io.get()));
  impl->mds = std::make_unique<MdsClient>(
      impl->channels->Make(opts.mds_address, rpc::kServiceMds).channel, NewClientId(),
      opts.rpc_timeout, opts.rpc_timeout);
  Status st = impl->mds->Ping(opts.connect_timeout);
  if (!st.ok()) {
    return Status(st.code() == ETIMEDOUT ? ETIMEDOUT : ECONNREFUSED,
                  "cannot reach MDS at " + opts.mds_address + ": " + st.ToString());
  }
  impl->pool = std::make_unique<OssPool>(impl->channels.get(), impl->mds.get());
  SFS_RETURN_IF_ERROR(impl->pool->Refresh());
  SFS_ASSIGN_OR_RETURN(std::vector<OstStatus> map, impl->mds->GetOstMap());
  for (const OstStatus& o : map) {
    if (!o.address.empty()) impl->osts.push_back(o.index);
  }
  if (impl->osts.empty()) return Status(ENODEV, "the MDS knows no OST");
  std::sort(impl->osts.begin(), impl->osts.end());
  return std::unique_ptr<KvClient>(new KvClient(std::move(impl)));
}

const std::vector<uint32_t>& KvClient::osts() const { return impl_->osts; }
uint32_t KvClient::Place(const BlockId& id) const { return impl_->Place(id); }

Result<std::unique_ptr<KvNamespace>> KvClient::Open(const std::string& name, uint64_t block_size) {
  // Every OST at once; the first error wins.
  std::vector<Impl::Call> calls(impl_->osts.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i].ost = impl_->osts[i];
    calls[i].payload = impl_->Payload(calls[i].ost, [&](proto::OssRequest& r) {
      r.mutable_kv_declare()->set_ns(name);
      r.mutable_kv_declare()->set_block_size(block_size);
    });
    impl_->Start(&calls[i]);
  }
  Status first;
  for (Impl::Call& c : calls) {
    Status st = impl_->Finish(&c, nullptr).status();
    if (!st.ok() && first.ok()) {
      first = Status(st.code(), "OST " + std::to_string(c.ost) + ": " + st.message());
    }
  }
  if (!first.ok()) return first;
  return std::make_unique<KvNamespace>(impl_.get(), name, block_size);
}

Status KvNamespace::Put(const BlockId& id, std::span<const uint8_t> data, uint32_t ttl_s) {
  PutItem item{id, data};
  return MultiPut({&item, 1}, ttl_s)[0];
}

Result<bool> KvNamespace::GetInto(const BlockId& id, std::span<uint8_t> buf, uint32_t lease_ms) {
  GetItem item{id, buf};
  return MultiGet({&item, 1}, lease_ms)[0];
}

std::vector<Status> KvNamespace::MultiPut(std::span<const PutItem> items, uint32_t ttl_s) {
  std::vector<Status> out(items.size());
  std::map<uint32_t, std::vector<size_t>> by_ost;
  for (size_t i = 0; i < items.size(); ++i) {
    out[i] = CheckBlock(items[i].id, items[i].data.size(), "kv put of ", name_, block_size_);
    if (out[i].ok()) by_ost[c_->Place(items[i].id)].push_back(i);
  }
  c_->PerOst(
      by_ost,
      [&](size_t i, KvClient::Impl::Call* call) {
        const PutItem& it = items[i];
        call->out = it.data;
        call->payload = c_->Payload(call->ost, [&](proto::OssRequest& r) {
          proto::KvPutReq* p = r.mutable_kv_put();
          p->set_ns(name_);
          p->set_key(std::string(it.id.key));
          p->set_group(std::string(it.id.group));
          p->set_ttl_s(ttl_s);
        });
      },
      [&](size_t i, KvClient::Impl::Call* call) {
        out[i] = c_->FinishRedeclaring(call, name_, block_size_, nullptr).status();
      });
  return out;
}

std::vector<Result<bool>> KvNamespace::MultiGet(std::span<const GetItem> items,
                                                uint32_t lease_ms) {
  std::vector<Result<bool>> out(items.size(), false);
  std::map<uint32_t, std::vector<size_t>> by_ost;
  for (size_t i = 0; i < items.size(); ++i) {
    Status st = CheckBlock(items[i].id, items[i].buf.size(), "kv get into ", name_, block_size_);
    if (st.ok()) {
      by_ost[c_->Place(items[i].id)].push_back(i);
    } else {
      out[i] = st;
    }
  }
  c_->PerOst(
      by_ost,
      [&](size_t i, KvClient::Impl::Call* call) {
        const GetItem& it = items[i];
        call->in = it.buf;
        call->payload = c_->Payload(call->ost, [&](proto::OssRequest& r) {
          proto::KvGetReq* g = r.mutable_kv_get();
          g->set_ns(name_);
          g->set_key(std::string(it.id.key));
          g->set_block_size(block_size_);
          g->set_lease_ms(lease_ms);
        });
      },
      [&](size_t i, KvClient::Impl::Call* call) {
        size_t bulk = 0;
        Result<proto::OssResponse> r = c_->FinishRedeclaring(call, name_, block_size_, &bulk);
        if (!r.ok()) {
          if (Unreachable(r.status().code())) {
            LOG_DEBUG("kv get from OST " << call->ost << ": " << r.status().ToString()
                                         << " (a miss)");
            out[i] = false;
          } else if (r.status().code() == EBADMSG) {
            // The bytes failed the end-to-end check (the OSS sends a block
            // unread, with the crc of its put): a miss, and the block goes, so
            // that nobody fetches it again. The buffer holds them: a miss's
            // buffer is undefined.
            LOG_WARN("kv get from OST " << call->ost << ": " << r.status().ToString()
                                        << "; block removed, a miss");
            (void)Remove({&items[i].id, 1});
            out[i] = false;
          } else {
            out[i] = r.status();
          }
        } else if (r->kv().found_size() != 1) {
          out[i] = Status(EPROTO, "kv get reply without its answer");
        } else if (r->kv().found(0) && bulk != block_size_) {
          out[i] = Status(EPROTO, "kv get reply of " + std::to_string(bulk) + " bytes");
        } else {
          out[i] = r->kv().found(0);
        }
      });
  return out;
}

void KvNamespace::MultiPutAsync(std::vector<PutItem> items, uint32_t ttl_s,
                                std::function<void(std::vector<Status>)> done) {
  c_->async_threads.Run([this, items = std::move(items), ttl_s, done = std::move(done)] {
    done(MultiPut(items, ttl_s));
  });
}

void KvNamespace::MultiGetAsync(std::vector<GetItem> items, uint32_t lease_ms,
                                std::function<void(std::vector<Result<bool>>)> done) {
  c_->async_threads.Run([this, items = std::move(items), lease_ms, done = std::move(done)] {
    done(MultiGet(items, lease_ms));
  });
}

std::future<std::vector<Status>> KvNamespace::MultiPutAsync(std::vector<PutItem> items,
                                                           uint32_t ttl_s) {
  auto p = std::make_shared<std::promise<std::vector<Status>>>();
  std::future<std::vector<Status>> f = p->get_future();
  MultiPutAsync(std::move(items), ttl_s, [p](std::vector<Status> r) { p->set_value(std::move(r)); });
  return f;
}

std::future<std::vector<Result<bool>>> KvNamespace::MultiGetAsync(std::vector<GetItem> items,
                                                                  uint32_t lease_ms) {
  auto p = std::make_shared<std::promise<std::vector<Result<bool>>>>();
  std::future<std::vector<Result<bool>>> f = p->get_future();
  MultiGetAsync(std::move(items), lease_ms,
                [p](std::vector<Result<bool>> r) { p->set_value(std::move(r)); });
  return f;
}

namespace {

enum class BatchOp { kExists, kRemove, kPin };

}  // namespace

// One request per OST (per kMaxBatch keys), all in flight at once; the
// answers back in the ids' order. Reads (exists) take an unreachable OSS
// as misses.
static Result<std::vector<bool>> Batch(KvClient::Impl* c, const std::string& ns,
                                       uint64_t block_size, std::span<const BlockId> ids,
                                       BatchOp op, uint32_t ms) {
  for (const BlockId& id : ids) SFS_RETURN_IF_ERROR(CheckId(id));
  std::map<uint32_t, std::vector<size_t>> by_ost;
  for (size_t i = 0; i < ids.size(); ++i) by_ost[c->Place(ids[i])].push_back(i);
  struct Part {
    KvClient::Impl::Call call;
    std::vector<size_t> which;
  };
  std::vector<Part> parts;
  for (auto& [ost, which] : by_ost) {
    for (size_t at = 0; at < which.size(); at += kMaxBatch) {
      Part p;
      p.which.assign(which.begin() + at, which.begin() + std::min(which.size(), at + kMaxBatch));
      p.call.ost = ost;
      p.call.payload = c->Payload(ost, [&](proto::OssRequest& r) {
        auto fill = [&](auto* m) {
          m->set_ns(ns);
          for (size_t i : p.which) m->add_keys(std::string(ids[i].key));
        };
        if (op == BatchOp::kExists) {
          fill(r.mutable_kv_exists());
          r.mutable_kv_exists()->set_lease_ms(ms);
        } else if (op == BatchOp::kRemove) {
          fill(r.mutable_kv_remove());
        } else {
          fill(r.mutable_kv_pin());
          r.mutable_kv_pin()->set_pin_ms(ms);
        }
      });
      parts.push_back(std::move(p));
    }
  }
  for (Part& p : parts) c->Start(&p.call);
  std::vector<bool> out(ids.size(), false);
  Status first;
  for (Part& p : parts) {
    Result<proto::OssResponse> r = c->FinishRedeclaring(&p.call, ns, block_size, nullptr);
    if (!r.ok()) {
      if (!(op == BatchOp::kExists && Unreachable(r.status().code())) && first.ok()) {
        first = r.status();
      }
      continue;
    }
    if (r->kv().found_size() != static_cast<int>(p.which.size())) {
      if (first.ok()) first = Status(EPROTO, "kv reply with a wrong number of answers");
      continue;
    }
    for (size_t j = 0; j < p.which.size(); ++j) out[p.which[j]] = r->kv().found(j);
  }
  if (!first.ok()) return first;
  return out;
}

Result<std::vector<bool>> KvNamespace::Exists(std::span<const BlockId> ids, uint32_t lease_ms) {
  return Batch(c_, name_, block_size_, ids, BatchOp::kExists, lease_ms);
}

Result<std::vector<bool>> KvNamespace::Remove(std::span<const BlockId> ids) {
  return Batch(c_, name_, block_size_, ids, BatchOp::kRemove, 0);
}

Result<std::vector<bool>> KvNamespace::Pin(std::span<const BlockId> ids, uint32_t pin_ms) {
  return Batch(c_, name_, block_size_, ids, BatchOp::kPin, pin_ms);
}

}  // namespace sfs::client::kv
