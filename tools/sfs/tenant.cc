// `sfs tenant`: tenants kept by the MDS (issue 17; docs/security.md), shaped
// after Lustre's nodemaps (a forced fileset, root squash, id maps) with a
// per-tenant secret as Lustre SSK binds keys to a nodemap.
#include <getopt.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "common/auth/capability.h"
#include "mds.pb.h"
#include "tools/sfs/commands.h"

namespace sfs::tools {
namespace {

constexpr const char* kHelp =
    "usage: sfs tenant create NAME --fileset PATH [--squash-root] [--map-uid A:B ...]\n"
    "                              [--map-gid A:B ...] --key-out FILE\n"
    "       sfs tenant list [--json]\n"
    "       sfs tenant show NAME [--json]\n"
    "       sfs tenant remove NAME\n"
    "       sfs tenant rotate-key NAME --key-out FILE\n"
    "       sfs tenant require on|off\n"
    "\n"
    "A tenant's mounts (sfs-mount -o tenant=NAME,keyfile=FILE) see only its fileset, the\n"
    "directory PATH of the file system, as /; the MDS checks every request against it.\n"
    "--squash-root makes the tenant's uid/gid 0 the id 65534; --map-uid A:B (and\n"
    "--map-gid) makes the client's id A the id B on the file system, and B shows as A.\n"
    "create and rotate-key write the tenant's new secret key to FILE, created with mode\n"
    "0600 (an existing FILE is never overwritten). rotate-key ends the mounts that used the\n"
    "old key at their next request; remove ends all of the tenant's mounts so. Root only.\n"
    "require on refuses every client that is no tenant's (the OSSes excepted); then run\n"
    "sfs as an admin tenant (fileset /, no --squash-root) with SFS_TENANT=NAME and\n"
    "SFS_KEYFILE=FILE in the environment.\n"
    "\n"
    "  -m, --mount PATH     any path on the mounted file system (default: the current\n"
    "                       directory)\n"
    "      --mds HOST:PORT  talk to this MDS instead of finding it through a mount\n"
    "      --json           (list, show) {\"tenants\":[{\"name\",\"fileset\",...}]}\n"
    "\n"
    "examples:\n"
    "  sfs tenant create teamA --fileset /teams/a --squash-root --map-uid 1000:5001 \\\n"
    "      --key-out /etc/stripefs/teamA.key -m /mnt/sfs\n"
    "  sfs tenant list -m /mnt/sfs\n"
    "  sfs tenant rotate-key teamA --key-out /etc/stripefs/teamA.key.new -m /mnt/sfs\n";

struct Args {
  GlobalOptions g;
  std::string mount = ".";
  std::string op;
  std::vector<std::string> operands;
  std::string key_out;
  proto::TenantRec rec;
};

bool ParseMap(const char* s, google::protobuf::RepeatedPtrField<proto::TenantIdMap>* out) {
  char* end = nullptr;
  unsigned long a = std::strtoul(s, &end, 10);
  if (end == s || *end != ':') return false;
  const char* b_text = end + 1;
  unsigned long b = std::strtoul(b_text, &end, 10);
  if (end == b_text || *end != '\0' || a > 0xffffffffUL || b > 0xffffffffUL) return false;
  proto::TenantIdMap* m = out->Add();
  m->set_from(static_cast<uint32_t>(a));
  m->set_to(static_cast<uint32_t>(b));
  return true;
}

// -1 when parsing succeeded, else the exit status.
int Parse(int argc, char** argv, Args* a) {
  enum { kFileset = 1000, kSquash, kMapUid, kMapGid, kKeyOut };
  static const option kLong[] = {{"mount", required_argument, nullptr, 'm'},
                                 {"mds", required_argument, nullptr, 'M'},
                                 {"json", no_argument, nullptr, 'J'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {"fileset", required_argument, nullptr, kFileset},
                                 {"squash-root", no_argument, nullptr, kSquash},
                                 {"map-uid", required_argument, nullptr, kMapUid},
                                 {"map-gid", required_argument, nullptr, kMapGid},
                                 {"key-out", required_argument, nullptr, kKeyOut},
                                 {nullptr, 0, nullptr, 0}};
  optind = 1;
  int opt;
  bool create_opts = false;
  while ((opt = getopt_long(argc, argv, "m:h", kLong, nullptr)) != -1) {
    switch (opt) {
      case 'm': a->mount = optarg; break;
      case 'h': std::fputs(kHelp, stdout); return 0;
      case kFileset: a->rec.set_fileset(optarg); create_opts = true; break;
      case kSquash: a->rec.set_squash_root(true); create_opts = true; break;
      case kMapUid:
      case kMapGid:
        if (!ParseMap(optarg, opt == kMapUid ? a->rec.mutable_uid_map() : a->rec.mutable_gid_map())) {
          std::fprintf(stderr, "sfs tenant: bad id map '%s' (want FROM:TO, two numbers)\n", optarg);
          return 2;
        }
        create_opts = true;
        break;
      case kKeyOut: a->key_out = optarg; break;
      default:
        if (!ParseGlobal(opt, optarg, &a->g)) {
          std::fputs(kHelp, stderr);
          return 2;
        }
    }
  }
  if (optind >= argc) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  a->op = argv[optind];
  for (int i = optind + 1; i < argc; ++i) a->operands.push_back(argv[i]);
  if (!a->g.mds.empty() && a->mount == ".") a->mount = "/";
  const std::string& op = a->op;
  if (op != "create" && op != "list" && op != "show" && op != "remove" && op != "rotate-key" &&
      op != "require") {
    std::fprintf(stderr, "sfs tenant: unknown operation '%s' (create, list, show, remove, "
                         "rotate-key, require)\n", op.c_str());
    return 2;
  }
  if (op == "require" && a->operands.size() == 1 && a->operands[0] != "on" &&
      a->operands[0] != "off") {
    std::fprintf(stderr, "sfs tenant: require on|off, not '%s'\n", a->operands[0].c_str());
    return 2;
  }
  size_t want = op == "list" ? 0 : 1;
  if (a->operands.size() != want) {
    std::fputs(kHelp, stderr);
    return 2;
  }
  if (create_opts && op != "create") {
    std::fprintf(stderr, "sfs tenant: --fileset, --squash-root and --map-* go with 'create'\n");
    return 2;
  }
  bool keyed = op == "create" || op == "rotate-key";
  if (keyed && a->key_out.empty()) {
    std::fprintf(stderr, "sfs tenant: %s needs --key-out FILE\n", op.c_str());
    return 2;
  }
  if (!keyed && !a->key_out.empty()) {
    std::fprintf(stderr, "sfs tenant: --key-out goes with 'create' and 'rotate-key'\n");
    return 2;
  }
  if (op == "create" && a->rec.fileset().empty()) {
    std::fprintf(stderr, "sfs tenant: create needs --fileset PATH\n");
    return 2;
  }
  return -1;
}

std::string Maps(const google::protobuf::RepeatedPtrField<proto::TenantIdMap>& maps,
                 const char* sep) {
  std::ostringstream os;
  for (int i = 0; i < maps.size(); ++i) os << (i ? sep : "") << maps[i].from() << ":" << maps[i].to();
  return os.str();
}

void Print(const proto::TenantResp& resp, bool json) {
  std::ostringstream os;
  if (json) {
    os << "{\"tenants\":[";
    for (int i = 0; i < resp.tenants_size(); ++i) {
      const proto::TenantRec& t = resp.tenants(i);
      os << (i ? "," : "") << "{\"name\":" << JsonString(t.name())
         << ",\"fileset\":" << JsonString(t.fileset()) << ",\"fileset_ino\":" << t.fileset_ino()
         << ",\"squash_root\":" << (t.squash_root() ? "true" : "false")
         << ",\"map_uid\":" << JsonString(Maps(t.uid_map(), ","))
         << ",\"map_gid\":" << JsonString(Maps(t.gid_map(), ","))
         << ",\"key_generation\":" << t.key_generation() << "}";
    }
    os << "],\"required\":" << (resp.required() ? "true" : "false") << "}\n";
  } else {
    char line[512];
    std::snprintf(line, sizeof(line), "%-20s %-32s %-6s %-24s %-24s %s\n", "TENANT", "FILESET",
                  "SQUASH", "MAP_UID", "MAP_GID", "KEY_GEN");
    os << line;
    for (const proto::TenantRec& t : resp.tenants()) {
      std::string mu = Maps(t.uid_map(), ","), mg = Maps(t.gid_map(), ",");
      std::snprintf(line, sizeof(line), "%-20s %-32s %-6s %-24s %-24s %llu\n", t.name().c_str(),
                    t.fileset().c_str(), t.squash_root() ? "yes" : "no",
                    mu.empty() ? "-" : mu.c_str(), mg.empty() ? "-" : mg.c_str(),
                    static_cast<unsigned long long>(t.key_generation()));
      os << line;
    }
    if (resp.required()) os << "(tenants required: clients without a tenant are refused)\n";
  }
  std::fputs(os.str().c_str(), stdout);
}

Status Call(Target& t, const proto::TenantReq& req, proto::TenantResp* resp) {
  std::string out;
  SFS_RETURN_IF_ERROR(t.client().TenantAdmin(t.cred(), req.SerializeAsString(), &out));
  if (!resp->ParseFromString(out)) return Status(EBADMSG, "unparsable TenantResp");
  return Status::Ok();
}

Status RunOp(Target& t, const Args& a) {
  proto::TenantReq req;
  proto::TenantResp resp;
  if (!a.operands.empty()) req.set_name(a.operands[0]);
  if (a.op == "list" || a.op == "show") {
    req.set_op(proto::TENANT_LIST);
    SFS_RETURN_IF_ERROR(Call(t, req, &resp));
    Print(resp, a.g.json);
    return Status::Ok();
  }
  if (a.op == "require") {
    req.clear_name();
    req.set_op(proto::TENANT_REQUIRE);
    req.set_require(a.operands[0] == "on");
    return Call(t, req, &resp);
  }
  if (a.op == "remove") {
    req.set_op(proto::TENANT_REMOVE);
    return Call(t, req, &resp);
  }
  // The key: made here, in a file only its owner may read (GenerateKey
  // creates it 0600 and never opens an existing one), read back as a mount
  // will read it, and only then handed to the MDS.
  SFS_RETURN_IF_ERROR(auth::GenerateKey(a.key_out));
  auto key = auth::LoadKey(a.key_out);
  if (!key.ok()) {
    ::unlink(a.key_out.c_str());
    return key.status();
  }
  req.set_op(a.op == "create" ? proto::TENANT_CREATE : proto::TENANT_ROTATE);
  if (a.op == "create") *req.mutable_rec() = a.rec;
  req.mutable_rec()->set_key(key->bytes);
  Status st = Call(t, req, &resp);
  if (!st.ok()) ::unlink(a.key_out.c_str());
  return st;
}

}  // namespace

int RunTenant(int argc, char** argv) {
  Args a;
  int rc = Parse(argc, argv, &a);
  if (rc >= 0) return rc;
  std::string cmd = "tenant " + a.op;
  auto t = Target::Open(a.g, a.mount);
  if (!t.ok()) return Fail(cmd, a.mount, t.status());
  Status st = RunOp(**t, a);
  return st.ok() ? 0 : Fail(cmd, a.operands.empty() ? a.mount : a.operands[0], st);
}

}  // namespace sfs::tools
