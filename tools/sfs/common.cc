// Helpers shared by the subcommands.
#include <cstdio>
#include <cstdlib>

#include "tools/sfs/commands.h"

namespace sfs::tools {

int Fail(const std::string& cmd, const std::string& what, const Status& st) {
  std::string reason = st.message().empty() ? st.ToString() : st.message();
  // Messages that already name the path are printed as they are.
  if (!what.empty() && reason.rfind(what + ":", 0) != 0) reason = what + ": " + reason;
  std::fprintf(stderr, "sfs %s: %s\n", cmd.c_str(), reason.c_str());
  return 1;
}

bool ParseEc(const char* cmd, const char* arg, client::LayoutSpec* spec) {
  char* end = nullptr;
  const long k = std::strtol(arg, &end, 10);
  long m = -1;
  if (end != arg && *end == '+') {
    const char* rest = end + 1;
    m = std::strtol(rest, &end, 10);
    if (end == rest) m = -1;
  }
  if (m < 0 || *end != '\0' || k < 1 || m < 1 || k + m > 32) {
    std::fprintf(stderr, "sfs %s: bad EC geometry '%s' (K+M with K >= 1, M >= 1, K+M <= 32)\n",
                 cmd, arg);
    return false;
  }
  spec->ec_data = static_cast<uint32_t>(k);
  spec->ec_parity = static_cast<uint32_t>(m);
  return true;
}

bool ParseGlobal(int opt, const char* arg, GlobalOptions* g) {
  if (opt == 'M') {
    g->mds = arg;
    return true;
  }
  if (opt == 'J') {
    g->json = true;
    return true;
  }
  return false;
}

}  // namespace sfs::tools
