// `sfs key status` and `sfs key rotate`: the MDS's rotating capability
// signing keys (docs/security.md "Rotating signing keys"). status lists
// their ids; rotate forces a rotation now, the answer to a suspected leak:
// a fresh key is published to the OSSes, signs a few seconds later, and
// every older key is then retired (tokens it signed are refused; clients
// renew). Root only. Key bytes never reach the CLI.
#include <getopt.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>

#include "mds.pb.h"
#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs key status [-m MOUNT | --mds HOST:PORT] [--json]\n"
    "       sfs key rotate [-m MOUNT | --mds HOST:PORT] [--json]\n"
    "\n"
    "status shows the MDS's capability signing keys by id: the one that signs, and every\n"
    "one the OSSes accept. rotate makes a new key now (a suspected leak): the OSSes learn it\n"
    "at once, it signs from a few seconds later, and then every older key is retired: tokens\n"
    "signed with them are refused (EACCES) and mounts renew theirs. Root only.\n";

std::string Ids(const google::protobuf::RepeatedField<uint32_t>& ids, const char* sep) {
  std::ostringstream os;
  for (int i = 0; i < ids.size(); ++i) os << (i ? sep : "") << ids[i];
  return os.str();
}

void Print(const proto::CapKeyResp& r, bool rotate, bool json) {
  if (json) {
    std::printf("{\"current_id\":%u,\"published_ids\":[%s],\"period_s\":%lld", r.current_id(),
                Ids(r.published_ids(), ",").c_str(), static_cast<long long>(r.period_s()));
    if (rotate) {
      std::printf(",\"new_id\":%u,\"signs_from_ms\":%lld,\"retiring_ids\":[%s]", r.new_id(),
                  static_cast<long long>(r.signs_from_ms()), Ids(r.retiring_ids(), ",").c_str());
    }
    std::printf("}\n");
    return;
  }
  std::printf("current_key: %u\npublished_keys: [%s]\nperiod_s: %lld\n", r.current_id(),
              Ids(r.published_ids(), ", ").c_str(), static_cast<long long>(r.period_s()));
  if (rotate) {
    std::printf("new_key: %u\nsigns_from_ms: %lld\nretiring_keys: [%s]\n", r.new_id(),
                static_cast<long long>(r.signs_from_ms()), Ids(r.retiring_ids(), ", ").c_str());
  }
}

}  // namespace

int RunKeyAdmin(int argc, char** argv) {
  static const option kLong[] = {{"mount", required_argument, nullptr, 'm'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"json", no_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  GlobalOptions g;
  std::string mount = ".";
  optind = 1;
  for (int opt; (opt = getopt_long(argc, argv, "m:h", kLong, nullptr)) != -1;) {
    if (opt == 'm') {
      mount = optarg;
    } else if (opt == 'h') {
      std::fputs(kHelp, stdout);
      return 0;
    } else if (!ParseGlobal(opt, optarg, &g)) {
      std::fputs(kHelp, stderr);
      return 2;
    }
  }
  if (optind != argc) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  const bool rotate = std::strcmp(argv[0], "rotate") == 0;
  const std::string cmd = std::string("key ") + argv[0];
  if (!g.mds.empty() && mount == ".") mount = "/";
  auto t = Target::Open(g, mount);
  if (!t.ok()) return Fail(cmd, mount, t.status());
  proto::CapKeyReq req;
  req.set_rotate(rotate);
  std::string out;
  Status st = (*t)->client().CapKeyAdmin((*t)->cred(), req.SerializeAsString(), &out);
  proto::CapKeyResp resp;
  if (st.ok() && !resp.ParseFromString(out)) st = Status(EBADMSG, "unparsable CapKeyResp");
  if (!st.ok()) return Fail(cmd, (*t)->mds(), st);
  Print(resp, rotate, g.json);
  return 0;
}

}  // namespace sfs::tools
