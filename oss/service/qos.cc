#include "oss/service/qos.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace sfs::oss {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Bytes(const QosCost& c) { return static_cast<double>(c.read_bytes + c.write_bytes); }

// Time the reservation tag moves for this request: it is within its
// reservation while either of the reserved rates is not met yet.
double ReserveStep(const QosRule& r, const QosCost& c) {
  double step = kInf;
  if (r.reserve_iops > 0) step = std::min(step, 1.0 / r.reserve_iops);
  if (r.reserve_bps > 0) step = std::min(step, Bytes(c) / r.reserve_bps);
  return step;
}

bool HasReservation(const QosRule& r) { return r.reserve_iops > 0 || r.reserve_bps > 0; }

}  // namespace

std::string QosClassOf(const QosRules& rules, const std::string& job_id, const std::string& tenant) {
  if (job_id == kResyncJob) return "resync";
  std::string t = "tenant:" + tenant;
  bool tenant_ruled = rules.count(t) != 0;
  if (tenant_ruled && tenant != kDefaultTenant) return t;
  std::string job = "job:" + job_id;
  if (rules.count(job) != 0) return job;
  if (tenant_ruled) return t;
  return job;  // unruled: weight 1, no limit, but a fair share of its own
}

void QosQueue::SetRules(QosRules rules) { rules_ = std::move(rules); }

const QosRule& QosQueue::RuleOf(const std::string& cls) const {
  auto it = rules_.find(cls);
  return it == rules_.end() ? default_rule_ : it->second;
}

namespace {
// A limit's bucket, in time: `tat` is when what it let through is paid for.
// A request is charged before it goes, from the later of tat and its arrival
// less the bucket's tolerance: so N bytes take at least N / rate - kBurst,
// whatever the size of the requests they come in (a 4 MiB write does not slip
// through an idle bucket for free). The request bucket tolerates one request,
// so an idle class's first small request never waits.
double BucketDue(double tat, double enqueued, double tolerance, double cost, double rate) {
  return std::max(tat, enqueued - tolerance) + cost / rate;
}
}  // namespace

double QosQueue::EligibleAt(const ClassState& s, const QosRule& r) const {
  const Queued& head = s.q.front();
  const QosCost& c = head.cost;
  double at = -kInf;
  if (r.read_bps > 0 && c.read_bytes > 0) {
    at = std::max(at, BucketDue(s.tat_read, head.enqueued, kBurst, c.read_bytes, r.read_bps));
  }
  if (r.write_bps > 0 && c.write_bytes > 0) {
    at = std::max(at, BucketDue(s.tat_write, head.enqueued, kBurst, c.write_bytes, r.write_bps));
  }
  if (r.iops > 0) {
    at = std::max(at, BucketDue(s.tat_ops, head.enqueued, std::max(kBurst, 1.0 / r.iops), 1, r.iops));
  }
  return at;
}

bool QosQueue::InReservation(const ClassState& s, const QosRule& r, double now) const {
  if (!HasReservation(r)) return false;
  const Queued& head = s.q.front();
  return std::max(s.r_tag + ReserveStep(r, head.cost), head.enqueued) <= now;
}

void QosQueue::Push(const std::string& cls, QosCost cost, Item item, double now) {
  ClassState& s = classes_[cls];
  if (s.q.empty()) s.start = std::max(vtime_, s.finish);
  s.q.push_back(Queued{cost, std::move(item), now});
  ++queued_;
}

QosQueue::ClassState* QosQueue::Choose(double now, double* wake, std::string* name,
                                       bool* reserved) {
  *wake = kInf;
  ClassState* best_res = nullptr;
  double best_res_tag = kInf;
  ClassState* best_fair = nullptr;
  const std::string* res_name = nullptr;
  const std::string* fair_name = nullptr;
  for (auto& [n, s] : classes_) {
    if (s.q.empty()) continue;
    const QosRule& r = RuleOf(n);
    double at = EligibleAt(s, r);
    if (at > now) {
      *wake = std::min(*wake, at);
      continue;
    }
    if (InReservation(s, r, now)) {
      double tag = std::max(s.r_tag + ReserveStep(r, s.q.front().cost), s.q.front().enqueued);
      if (tag < best_res_tag) best_res = &s, best_res_tag = tag, res_name = &n;
    } else if (best_fair == nullptr || s.start < best_fair->start) {
      best_fair = &s, fair_name = &n;
    }
  }
  *reserved = best_res != nullptr;
  ClassState* s = best_res != nullptr ? best_res : best_fair;
  if (s != nullptr) *name = *(best_res != nullptr ? res_name : fair_name);
  return s;
}

std::optional<QosQueue::Item> QosQueue::Pop(double now, double* wake) {
  std::string name;
  bool reserved = false;
  ClassState* s = Choose(now, wake, &name, &reserved);
  if (s == nullptr) return std::nullopt;
  return Dispatch(s, name, reserved, now);
}

bool QosQueue::TakeNow(const std::string& cls, QosCost cost, double now) {
  auto it = classes_.find(cls);
  const bool existed = it != classes_.end();
  if (existed && !it->second.q.empty()) return false;  // its own go first
  // As if pushed: chosen first, it is dispatched; else it comes off again.
  Push(cls, cost, Item{}, now);
  std::string name;
  bool reserved = false;
  double wake = 0;
  ClassState* s = Choose(now, &wake, &name, &reserved);
  if (s != nullptr && name == cls) {
    (void)Dispatch(s, name, reserved, now);
    return true;
  }
  ClassState& mine = classes_[cls];
  mine.q.pop_back();
  --queued_;
  if (!existed) classes_.erase(cls);
  return false;
}

QosQueue::Item QosQueue::Dispatch(ClassState* s, const std::string& name_ref, bool reserved,
                                  double now) {
  const std::string name = name_ref;  // the class may be erased below
  const QosRule& r = RuleOf(name);
  Queued head = std::move(s->q.front());
  s->q.pop_front();
  --queued_;
  const QosCost& c = head.cost;
  // Paid up to its due time; a class held back by others (dispatched well
  // after it was due) catches up by at most kBurst.
  auto pay = [&](double* tat, double tolerance, double cost, double rate) {
    *tat = std::max(BucketDue(*tat, head.enqueued, tolerance, cost, rate), now - kBurst);
  };
  if (r.read_bps > 0 && c.read_bytes > 0) pay(&s->tat_read, kBurst, c.read_bytes, r.read_bps);
  if (r.write_bps > 0 && c.write_bytes > 0) pay(&s->tat_write, kBurst, c.write_bytes, r.write_bps);
  if (r.iops > 0) pay(&s->tat_ops, std::max(kBurst, 1.0 / r.iops), 1, r.iops);
  if (HasReservation(r)) s->r_tag = std::max(s->r_tag + ReserveStep(r, c), head.enqueued);
  if (!reserved) {
    // Fair share: the virtual time moves to this start tag. A dispatch made
    // for the reservation leaves the class's fair-share tags alone (as mClock
    // does), so what is reserved comes on top of its weight's share.
    double units = 1.0 + Bytes(c) / kCostBytes;
    vtime_ = std::max(vtime_, s->start);
    s->finish = s->start + units / r.weight;
    if (!s->q.empty()) s->start = std::max(vtime_, s->finish);
  }

  // Stats are kept per ruled class; unruled jobs are counted together.
  QosClassStats& st = stats_[rules_.count(name) != 0 || name == "resync" ? name : "other"];
  ++st.dispatched;
  double waited = std::max(0.0, now - head.enqueued);
  if (waited > 1e-3) ++st.delayed;
  st.wait_seconds += waited;
  st.read_bytes += c.read_bytes;
  st.write_bytes += c.write_bytes;
  // An idle unruled class's state goes (its fair-share tags restart at the
  // virtual time, which is what a newly active flow gets anyway).
  if (s->q.empty() && rules_.count(name) == 0) classes_.erase(name);
  return std::move(head.item);
}

std::vector<QosQueue::Item> QosQueue::TakeAll() {
  std::vector<Item> out;
  for (auto& [name, s] : classes_) {
    for (Queued& q : s.q) out.push_back(std::move(q.item));
    s.q.clear();
  }
  queued_ = 0;
  return out;
}

QosScheduler::QosScheduler(int threads) {
  slots_ = static_cast<size_t>(std::max(1, threads));
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Run(); });
}

QosScheduler::~QosScheduler() { Stop(); }

void QosScheduler::SetRules(QosRules rules) {
  std::lock_guard lock(mu_);
  enabled_.store(!rules.empty(), std::memory_order_release);
  rules_ = rules;
  queue_.SetRules(std::move(rules));
  cv_.notify_all();
}

QosRules QosScheduler::rules() const {
  std::lock_guard lock(mu_);
  return rules_;
}

std::string QosScheduler::ClassOf(const std::string& job_id, const std::string& tenant) const {
  std::lock_guard lock(mu_);
  return QosClassOf(rules_, job_id, tenant);
}

std::optional<std::string> QosScheduler::RuledClass(const std::string& job_id,
                                                    const std::string& tenant) const {
  std::lock_guard lock(mu_);
  std::string cls = QosClassOf(rules_, job_id, tenant);
  if (cls != "resync" && rules_.count(cls) == 0) return std::nullopt;
  return cls;
}

void QosScheduler::Submit(const std::string& cls, QosCost cost, std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (!stopping_) {
      queue_.Push(cls, cost, std::move(fn), Now());
      cv_.notify_one();
      return;
    }
  }
  fn();  // shutting down: no more scheduling
}

bool QosScheduler::RunNow(const std::string& cls, QosCost cost, const std::function<void()>& fn) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || running_ >= slots_ || !queue_.TakeNow(cls, cost, Now())) return false;
    ++running_;
  }
  fn();
  std::lock_guard lock(mu_);
  --running_;
  cv_.notify_one();  // an executor may wait for the slot
  return true;
}

void QosScheduler::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (stopping_) {
      std::vector<QosQueue::Item> rest = queue_.TakeAll();
      lock.unlock();
      for (auto& fn : rest) fn();
      return;
    }
    double wake = kInf;
    std::optional<QosQueue::Item> item;
    if (running_ < slots_) item = queue_.Pop(Now(), &wake);
    if (item) {
      ++running_;
      lock.unlock();
      (*item)();
      lock.lock();
      --running_;
      if (queue_.size() > 0) cv_.notify_one();  // one may wait for this slot
      continue;
    }
    if (running_ >= slots_ || wake == kInf) {
      cv_.wait(lock);
    } else {
      cv_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, wake - Now())));
    }
  }
}

void QosScheduler::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

std::map<std::string, QosClassStats> QosScheduler::stats() const {
  std::lock_guard lock(mu_);
  return queue_.stats();
}

size_t QosScheduler::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace sfs::oss
