// Helpers shared by the subcommands.
#include <cstdio>

#include "tools/sfs/commands.h"

namespace sfs::tools {

int Fail(const std::string& cmd, const std::string& what, const Status& st) {
  std::string reason = st.message().empty() ? st.ToString() : st.message();
  // Messages that already name the path are printed as they are.
  if (!what.empty() && reason.rfind(what + ":", 0) != 0) reason = what + ": " + reason;
  std::fprintf(stderr, "sfs %s: %s\n", cmd.c_str(), reason.c_str());
  return 1;
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
