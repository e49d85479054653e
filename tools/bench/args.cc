// The IOR/mdtest-style option parser (see args.h).
#include "tools/bench/args.h"

#include <cerrno>
#include <cstdlib>

#include "client/lib/client.h"

namespace sfs::bench {

void ArgParser::Flag(const char* name, bool* out, const char* help) {
  opts_.push_back({name, Kind::kFlag, out, help});
}
void ArgParser::Size(const char* name, uint64_t* out, const char* help) {
  opts_.push_back({name, Kind::kSize, out, help});
}
void ArgParser::Int(const char* name, int64_t* out, const char* help) {
  opts_.push_back({name, Kind::kInt, out, help});
}
void ArgParser::Text(const char* name, std::string* out, const char* help) {
  opts_.push_back({name, Kind::kText, out, help});
}

const ArgParser::Opt* ArgParser::Find(const std::string& name) const {
  for (const Opt& o : opts_) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

Status ArgParser::SetValue(const Opt& o, const std::string& value) {
  switch (o.kind) {
    case Kind::kSize: {
      Result<uint64_t> v = client::ParseSize(value);
      if (!v.ok()) return Status(EINVAL, o.name + ": " + v.status().message());
      *static_cast<uint64_t*>(o.out) = *v;
      return Status::Ok();
    }
    case Kind::kInt: {
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || errno != 0) {
        return Status(EINVAL, o.name + ": bad number '" + value + "'");
      }
      *static_cast<int64_t*>(o.out) = v;
      return Status::Ok();
    }
    case Kind::kText:
      *static_cast<std::string*>(o.out) = value;
      return Status::Ok();
    case Kind::kFlag:
      break;
  }
  return Status(EINVAL, o.name + " takes no value");
}

// "-wrk": every letter a known flag.
bool ArgParser::TryGroupedFlags(const std::string& tok) {
  if (tok.size() < 3 || tok[0] != '-' || tok[1] == '-') return false;
  for (size_t i = 1; i < tok.size(); ++i) {
    const Opt* o = Find(std::string("-") + tok[i]);
    if (o == nullptr || o->kind != Kind::kFlag) return false;
  }
  for (size_t i = 1; i < tok.size(); ++i) {
    *static_cast<bool*>(Find(std::string("-") + tok[i])->out) = true;
  }
  return true;
}

Status ArgParser::Parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string tok = argv[i];
    if (tok == "-h" || tok == "--help") {
      help_ = true;
      return Status::Ok();
    }
    std::string name = tok, value;
    bool has_value = false;
    size_t eq = tok.find('=');
    if (tok.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = tok.substr(0, eq);
      value = tok.substr(eq + 1);
      has_value = true;
    }
    const Opt* o = Find(name);
    if (o == nullptr) {
      if (TryGroupedFlags(tok)) continue;
      if (tok.empty() || tok[0] != '-') return Status(EINVAL, "unexpected argument '" + tok + "'");
      return Status(EINVAL, "unknown option " + tok);
    }
    if (o->kind == Kind::kFlag) {
      if (has_value) return Status(EINVAL, name + " takes no value");
      *static_cast<bool*>(o->out) = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) return Status(EINVAL, name + " needs a value");
      value = argv[++i];
    }
    SFS_RETURN_IF_ERROR(SetValue(*o, value));
  }
  return Status::Ok();
}

std::string ArgParser::Help() const {
  std::string out;
  for (const Opt& o : opts_) {
    if (o.help == nullptr) continue;
    std::string lhs = "  " + o.name;
    if (o.kind == Kind::kSize) lhs += " SIZE";
    if (o.kind == Kind::kInt) lhs += " N";
    if (o.kind == Kind::kText) lhs += " ARG";
    if (lhs.size() < 20)
      lhs.resize(20, ' ');
    else
      lhs += "  ";
    out += lhs + o.help + "\n";
  }
  return out;
}

}  // namespace sfs::bench
