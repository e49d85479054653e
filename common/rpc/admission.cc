// AdmissionBudget (admission.h): the byte budget of a server's requests.
#include "common/rpc/admission.h"

#include <algorithm>
#include <vector>

namespace sfs::rpc {

void AdmissionBudget::Charge(Account& a, uint64_t bytes) {
  a.in_flight += bytes;
  in_flight_ += bytes;
  stats_.peak = std::max(stats_.peak, in_flight_);
}

// Grants queued waiters in order while the server budget allows; a waiter
// blocked only by its own connection's budget is skipped, not waited for.
void AdmissionBudget::GrantLocked(std::vector<std::function<void()>>* wakes) {
  for (auto it = queue_.begin(); it != queue_.end();) {
    Waiter& w = **it;
    if (!Fits(in_flight_, w.cost, server_limit_)) break;
    if (!Fits(w.account->in_flight, w.cost, conn_limit_)) {
      ++it;
      continue;
    }
    Charge(*w.account, w.cost);
    w.granted = std::make_shared<Ticket>(shared_from_this(), w.account, w.cost);
    if (wakes && w.wake) wakes->push_back(w.wake);
    it = queue_.erase(it);
  }
}

std::shared_ptr<AdmissionBudget::Ticket> AdmissionBudget::TryAcquire(
    const std::shared_ptr<Waiter>& w) {
  std::vector<std::function<void()>> wakes;
  std::shared_ptr<Ticket> mine;
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(w);
    GrantLocked(&wakes);
    if (w->granted) {
      mine = std::move(w->granted);
      if (w->wake) wakes.pop_back();  // w's own: granted at once, nobody waits
    } else {
      ++stats_.waits;
    }
  }
  for (auto& f : wakes) f();
  return mine;
}

std::shared_ptr<AdmissionBudget::Ticket> AdmissionBudget::TakeGrant(
    const std::shared_ptr<Waiter>& w) {
  std::lock_guard<std::mutex> l(mu_);
  return std::move(w->granted);
}

void AdmissionBudget::Cancel(const std::shared_ptr<Waiter>& w) {
  std::shared_ptr<Ticket> raced;  // released after the lock is dropped
  {
    std::lock_guard<std::mutex> l(mu_);
    raced = std::move(w->granted);
    queue_.erase(std::remove(queue_.begin(), queue_.end(), w), queue_.end());
  }
}

void AdmissionBudget::Release(Account& a, uint64_t bytes) {
  std::vector<std::function<void()>> wakes;
  {
    std::lock_guard<std::mutex> l(mu_);
    a.in_flight -= bytes;
    in_flight_ -= bytes;
    if (!shut_) GrantLocked(&wakes);
  }
  for (auto& f : wakes) f();
}

void AdmissionBudget::Ticket::Grow(uint64_t more) {
  std::lock_guard<std::mutex> l(budget_->mu_);
  budget_->Charge(*account_, more);
  bytes_ += more;
}

void AdmissionBudget::Shutdown() {
  std::deque<std::shared_ptr<Waiter>> dropped;
  std::lock_guard<std::mutex> l(mu_);
  shut_ = true;
  dropped.swap(queue_);
}

AdmissionBudget::Stats AdmissionBudget::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  Stats s = stats_;
  s.in_flight = in_flight_;
  return s;
}

}  // namespace sfs::rpc
