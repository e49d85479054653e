// Admission: the byte budget that bounds a server's memory.
//
// Every request a server reads is charged its bytes (a fixed per-call
// overhead + payload + bulk + the reply bulk its handler says it will produce)
// against two budgets before its bulk is allocated: its connection's
// (per_conn_limit) and the server's (server_limit). The charge is a Ticket,
// held until the reply has been written (or the call is dropped unanswered).
// A request that does not fit waits: its connection's read loop stops reading
// (TCP back-pressure slows that client), nothing is dropped or failed.
//
// A request fits when in-flight + cost <= limit for both budgets, or when the
// budget it exceeds has nothing else in flight, so a request larger than a
// budget is served alone and never deadlocks. Waiters are granted in arrival
// order on the server budget (one waiter never starves behind later small
// ones); a waiter held back only by its own connection's budget lets later
// waiters of other connections pass. Held calls (long polls) carry no bulk, so
// each costs only the overhead: bytes are counted, not calls.
//
// Thread-safe. Wake callbacks run without the lock held.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace sfs::rpc {

class AdmissionBudget : public std::enable_shared_from_this<AdmissionBudget> {
 public:
  // Charged per call on top of its bytes: Request, ReplyFn, queue entries.
  static constexpr uint64_t kCallOverhead = 512;

  struct Account {  // one per connection
    uint64_t in_flight = 0;  // GUARDED_BY(budget mu_)
  };

  // Admitted bytes; released when the last reference goes.
  class Ticket {
   public:
    Ticket(std::shared_ptr<AdmissionBudget> b, std::shared_ptr<Account> a, uint64_t bytes)
        : budget_(std::move(b)), account_(std::move(a)), bytes_(bytes) {}
    ~Ticket() { budget_->Release(*account_, bytes_); }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    uint64_t bytes() const { return bytes_; }
    // Charges `more` bytes at once, without waiting (a reply larger than
    // announced). Not thread-safe against itself: one owner at a time.
    void Grow(uint64_t more);

   private:
    std::shared_ptr<AdmissionBudget> budget_;
    std::shared_ptr<Account> account_;
    uint64_t bytes_;
  };

  struct Waiter {
    std::shared_ptr<Account> account;
    uint64_t cost = 0;
    std::function<void()> wake;        // called once when granted (not from TryAcquire)
    std::shared_ptr<Ticket> granted;   // GUARDED_BY(budget mu_)
  };

  struct Stats {
    uint64_t in_flight = 0;  // bytes admitted now
    uint64_t peak = 0;       // most bytes ever admitted at once
    uint64_t waits = 0;      // admissions that had to wait
  };

  AdmissionBudget(uint64_t server_limit, uint64_t per_conn_limit)
      : server_limit_(server_limit), conn_limit_(per_conn_limit) {}

  // A ticket at once if `w` fits and nobody waits ahead of it; otherwise `w`
  // is queued, null is returned, and w->wake() runs once it is granted.
  std::shared_ptr<Ticket> TryAcquire(const std::shared_ptr<Waiter>& w);
  // The ticket granted to a queued waiter, or null if not granted yet.
  std::shared_ptr<Ticket> TakeGrant(const std::shared_ptr<Waiter>& w);
  // Withdraws a waiter (its connection closes); a grant that raced is released.
  void Cancel(const std::shared_ptr<Waiter>& w);
  // Drops every waiter; no wake runs afterwards (the server is stopping).
  void Shutdown();
  Stats stats() const;

 private:
  void Release(Account& a, uint64_t bytes);
  void Charge(Account& a, uint64_t bytes);           // REQUIRES mu_
  void GrantLocked(std::vector<std::function<void()>>* wakes);  // REQUIRES mu_
  static bool Fits(uint64_t in_flight, uint64_t cost, uint64_t limit) {
    return in_flight == 0 || in_flight + cost <= limit;
  }

  const uint64_t server_limit_;
  const uint64_t conn_limit_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<Waiter>> queue_;  // GUARDED_BY(mu_)
  uint64_t in_flight_ = 0;                     // GUARDED_BY(mu_)
  Stats stats_;                                // GUARDED_BY(mu_)
  bool shut_ = false;                          // GUARDED_BY(mu_)
};

}  // namespace sfs::rpc
