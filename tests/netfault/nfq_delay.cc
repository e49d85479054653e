// sfs-nfq-delay: a user-space stand-in for `tc netem delay ... reorder ...`
// for the network-fault test, on kernels without sch_netem (the test VM's).
//
// iptables sends the packets of one direction to NFQUEUE queue N; this
// program takes each packet's id from the kernel (metadata only: no payload
// is copied) and gives the kernel its ACCEPT verdict later, so the packet
// continues on its way after the delay. Verdicts may be given in any order,
// so holding some packets longer than others reorders them for real: the
// TCP stacks on both ends see delayed, reordered segments, duplicate ACKs
// and retransmissions, exactly as on a bad network.
//
//   sfs-nfq-delay --queue N [--delay-ms D] [--jitter-ms J]
//                 [--reorder-pct P --reorder-ms X] [--seed S]
//
// Each packet is released D ms after it arrived, plus a uniform jitter in
// [-J, +J] ms; these keep their order (a packet never leaves before one that
// arrived earlier). With --reorder-pct, P % of the packets (chosen at random)
// are instead held D + X ms, so the packets behind them overtake them.
// Prints `READY` on stdout once it is bound to the queue. On SIGTERM/SIGINT it
// releases everything it holds, prints one line of counts on stderr
// (packets; reordered = how many left after a packet that arrived later;
// the mean time a packet was held) and exits 0.
// Bad flags: usage on stderr, exit 2; no permission or no nfnetlink_queue: 1.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <queue>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

constexpr char kUsage[] =
    "usage: sfs-nfq-delay --queue N [--delay-ms D] [--jitter-ms J] "
    "[--reorder-pct P --reorder-ms X] [--seed S]";

struct Config {
  int queue = -1;
  int delay_ms = 0;
  int jitter_ms = 0;
  int reorder_pct = 0;
  int reorder_ms = 0;
  unsigned seed = 1;
};

bool ParseInt(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

bool ParseFlags(int argc, char** argv, Config* c) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    const char* v = argv[i + 1];
    int seed = 0;
    bool ok = f == "--queue"         ? ParseInt(v, 0, 65535, &c->queue)
              : f == "--delay-ms"    ? ParseInt(v, 0, 10000, &c->delay_ms)
              : f == "--jitter-ms"   ? ParseInt(v, 0, 10000, &c->jitter_ms)
              : f == "--reorder-pct" ? ParseInt(v, 0, 100, &c->reorder_pct)
              : f == "--reorder-ms"  ? ParseInt(v, 0, 10000, &c->reorder_ms)
              : f == "--seed"        ? ParseInt(v, 0, 1 << 30, &seed)
                                     : false;
    if (!ok) return false;
    if (f == "--seed") c->seed = static_cast<unsigned>(seed);
  }
  return argc % 2 == 1 && c->queue >= 0 && c->jitter_ms <= c->delay_ms;
}

// The packets held back, in release order, and what was seen.
class Delayer {
 public:
  explicit Delayer(const Config& c) : cfg_(c), rng_(c.seed) {}

  void Arrived(uint32_t id) {
    Clock::time_point now = Clock::now();
    ++packets_;
    uint64_t seq = ++seq_;
    if (cfg_.reorder_pct > 0 && Percent() < cfg_.reorder_pct) {
      Hold({now + std::chrono::milliseconds(cfg_.delay_ms + cfg_.reorder_ms), now, seq, id});
      return;
    }
    int64_t j = cfg_.jitter_ms * 1000;
    int64_t us = cfg_.delay_ms * 1000 + std::uniform_int_distribution<int64_t>(-j, j)(rng_);
    last_in_order_ = std::max(last_in_order_, now + microseconds(us));
    Hold({last_in_order_, now, seq, id});
  }

  // Accepts every packet whose time has come (all of them with `all`).
  void Release(nfq_q_handle* qh, bool all) {
    Clock::time_point now = Clock::now();
    while (!heap_.empty() && (all || heap_.top().release <= now)) {
      const Held& h = heap_.top();
      if (h.seq < max_released_seq_) ++reordered_;
      held_us_ += std::chrono::duration_cast<microseconds>(now - h.arrived).count();
      max_released_seq_ = std::max(max_released_seq_, h.seq);
      nfq_set_verdict(qh, h.id, NF_ACCEPT, 0, nullptr);
      heap_.pop();
    }
  }

  // Milliseconds until the next release, at most cap.
  int NextTimeoutMs(int cap) const {
    if (heap_.empty()) return cap;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(heap_.top().release - Clock::now());
    return static_cast<int>(std::clamp<int64_t>(left.count(), 0, cap));
  }

  void PrintCounts() const {
    double mean_ms = packets_ ? static_cast<double>(held_us_) / 1000.0 / packets_ : 0;
    std::fprintf(stderr,
                 "sfs-nfq-delay queue %d: %llu packets, %llu reordered, mean delay %.1f ms, "
                 "at most %zu held\n",
                 cfg_.queue, static_cast<unsigned long long>(packets_),
                 static_cast<unsigned long long>(reordered_), mean_ms, max_held_);
  }

 private:
  struct Held {
    Clock::time_point release;
    Clock::time_point arrived;
    uint64_t seq;  // arrival order
    uint32_t id;   // the kernel's packet id
    bool operator>(const Held& o) const {
      return release != o.release ? release > o.release : seq > o.seq;
    }
  };

  void Hold(const Held& h) {
    heap_.push(h);
    max_held_ = std::max(max_held_, heap_.size());
  }
  int Percent() { return std::uniform_int_distribution<int>(0, 99)(rng_); }

  const Config cfg_;
  std::mt19937_64 rng_;
  std::priority_queue<Held, std::vector<Held>, std::greater<Held>> heap_;
  Clock::time_point last_in_order_{};
  uint64_t seq_ = 0;
  uint64_t packets_ = 0;
  uint64_t reordered_ = 0;
  int64_t held_us_ = 0;  // sum over released packets
  uint64_t max_released_seq_ = 0;
  size_t max_held_ = 0;
};

volatile std::sig_atomic_t g_stop = 0;

int OnPacket(nfq_q_handle*, nfgenmsg*, nfq_data* nfa, void* data) {
  if (nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa)) {
    static_cast<Delayer*>(data)->Arrived(ntohl(ph->packet_id));
  }
  return 0;
}

int Die(const char* what) {
  std::fprintf(stderr, "sfs-nfq-delay: %s: %s\n", what, std::strerror(errno));
  return 1;
}

// Binds queue cfg.queue and runs until a signal; returns the exit status.
int Run(const Config& cfg) {
  Delayer delayer(cfg);
  nfq_handle* h = nfq_open();
  if (h == nullptr) return Die("nfq_open (needs root and nfnetlink_queue)");
  nfq_q_handle* qh = nfq_create_queue(h, static_cast<uint16_t>(cfg.queue), &OnPacket, &delayer);
  if (qh == nullptr) return Die("nfq_create_queue (queue in use?)");
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) return Die("nfq_set_mode");
  nfq_set_queue_maxlen(qh, 1 << 16);
  // Whole GSO packets, as the stack made them (no segmentation for us).
  nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
  nfnl_rcvbufsiz(nfq_nfnlh(h), 16 << 20);
  int fd = nfq_fd(h);
  int one = 1;  // a burst we cannot take in time drops packets, not our socket
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
  std::printf("READY\n");
  std::fflush(stdout);
  std::vector<char> buf(1 << 18);
  while (!g_stop) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, delayer.NextTimeoutMs(100)) > 0) {
      for (;;) {
        ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n <= 0) break;
        nfq_handle_packet(h, buf.data(), static_cast<int>(n));
      }
    }
    delayer.Release(qh, /*all=*/false);
  }
  delayer.Release(qh, /*all=*/true);
  delayer.PrintCounts();
  nfq_destroy_queue(qh);
  nfq_close(h);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (!ParseFlags(argc, argv, &cfg)) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop = 1; };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  return Run(cfg);
}
