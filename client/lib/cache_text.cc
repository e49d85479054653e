#include "client/lib/cache_text.h"

#include <charconv>
#include <cstdio>
#include <utility>

namespace sfs::client {
namespace {

bool ParseU64(std::string_view s, uint64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// The counters by name, in print order.
std::vector<std::pair<const char*, uint64_t CacheStats::*>> Fields() {
  return {{"hits", &CacheStats::hits},
          {"misses", &CacheStats::misses},
          {"hit_bytes", &CacheStats::hit_bytes},
          {"miss_bytes", &CacheStats::miss_bytes},
          {"joined_bytes", &CacheStats::joined_bytes},
          {"bytes", &CacheStats::bytes},
          {"capacity", &CacheStats::capacity},
          {"ram_bytes", &CacheStats::ram_bytes},
          {"ram_capacity", &CacheStats::ram_capacity},
          {"ram_carved", &CacheStats::ram_carved},
          {"ram_reused", &CacheStats::ram_reused},
          {"blocks", &CacheStats::blocks},
          {"evictions", &CacheStats::evictions},
          {"corrupt", &CacheStats::corrupt},
          {"prefetched_blocks", &CacheStats::prefetched_blocks},
          {"prefetched_bytes", &CacheStats::prefetched_bytes},
          {"prefetch_files", &CacheStats::prefetch_files},
          {"prefetch_skipped", &CacheStats::prefetch_skipped},
          {"hint_length", &CacheStats::hint_length},
          {"hint_done", &CacheStats::hint_done},
          {"hint_window", &CacheStats::hint_window},
          {"hint_waiting", &CacheStats::hint_waiting},
          {"read_ahead_bytes", &CacheStats::read_ahead_bytes},
          {"hinted_lookups", &CacheStats::hinted_lookups}};
}

}  // namespace

Result<std::vector<PrefetchItem>> ParsePrefetchList(std::string_view text) {
  std::vector<PrefetchItem> out;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto bad = [&](const char* why) {
      return Status(EINVAL, "hint line " + std::to_string(line_no) + ": " + why);
    };
    PrefetchItem it;
    size_t tab = line.find('\t');
    it.path = std::string(line.substr(0, tab));
    if (it.path.empty() || it.path[0] != '/') return bad("not an absolute path");
    if (tab != std::string_view::npos) {
      std::string_view rest = line.substr(tab + 1);
      size_t tab2 = rest.find('\t');
      if (tab2 == std::string_view::npos) return bad("want PATH<TAB>OFFSET<TAB>LENGTH");
      if (!ParseU64(rest.substr(0, tab2), &it.offset)) return bad("bad offset");
      std::string_view len = rest.substr(tab2 + 1);
      if (len != "-" && !ParseU64(len, &it.length)) return bad("bad length");
    }
    out.push_back(std::move(it));
  }
  return out;
}

std::string FormatPrefetchItem(const PrefetchItem& it) {
  if (it.offset == 0 && it.length == UINT64_MAX) return it.path + "\n";
  return it.path + "\t" + std::to_string(it.offset) + "\t" +
         (it.length == UINT64_MAX ? std::string("-") : std::to_string(it.length)) + "\n";
}

std::string FormatCacheStats(const CacheStats& s) {
  std::string out;
  for (const auto& [name, field] : Fields()) {
    out += std::string(name) + ": " + std::to_string(s.*field) + "\n";
    if (field == &CacheStats::misses) {
      char rate[32];
      uint64_t asked = s.hits + s.misses;
      std::snprintf(rate, sizeof(rate), "%.4f", asked == 0 ? 0.0 : double(s.hits) / asked);
      out += std::string("hit_rate: ") + rate + "\n";
    }
  }
  out += "dir: " + (s.dir.empty() ? std::string("-") : s.dir) + "\n";
  return out;
}

Result<CacheStats> ParseCacheStats(std::string_view text) {
  CacheStats s;
  const auto fields = Fields();
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    size_t colon = line.find(": ");
    if (colon == std::string_view::npos) return Status(EINVAL, "bad cache status line");
    std::string_view key = line.substr(0, colon), value = line.substr(colon + 2);
    if (key == "dir") {
      s.dir = value == "-" ? "" : std::string(value);
      continue;
    }
    for (const auto& [name, field] : fields) {
      if (key == name && !ParseU64(value, &(s.*field))) {
        return Status(EINVAL, "bad cache status value for " + std::string(key));
      }
    }
  }
  return s;
}

}  // namespace sfs::client
