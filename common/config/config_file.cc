#include "common/config/config_file.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <string_view>
#include <utility>

// toml++ is header-only and heavy: this is the one file that includes it.
#include <toml++/toml.h>

namespace sfs::config {
namespace {

std::string Origin(const std::string& path, const toml::source_region& where) {
  return path + ":" + std::to_string(where.begin.line);
}

// A scalar as a flag spells it, or nullopt for a value no flag takes.
std::optional<std::string> FlagValue(const toml::node& v) {
  if (auto s = v.as_string()) return s->get();
  if (auto i = v.as_integer()) return std::to_string(i->get());
  if (auto b = v.as_boolean()) return std::string(b->get() ? "on" : "off");
  return std::nullopt;
}

// "--key=value" or "--key value" -> "key"; "" for a word that is not a flag.
std::string_view FlagName(std::string_view word) {
  if (word.size() < 3 || word.substr(0, 2) != "--") return {};
  word.remove_prefix(2);
  return word.substr(0, word.find('='));
}

}  // namespace

std::string Where(const Arg& arg) { return arg.origin.empty() ? "" : arg.origin + ": "; }

Result<std::vector<Arg>> ReadConfigFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::Errno(ENOENT, path + ": no such config file");
  }
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return Status::Errno(EINVAL, Origin(path, e.source()) + ": " + std::string(e.description()));
  }
  // toml::table orders its keys by name; the flags keep the file's order.
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (auto&& [key, value] : table) entries.emplace_back(&key, &value);
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.first->source().begin.line < b.first->source().begin.line;
  });
  std::vector<Arg> args;
  for (auto [key_ptr, value_ptr] : entries) {
    const toml::key& key = *key_ptr;
    const toml::node& value = *value_ptr;
    std::string name(key.str());
    for (char& c : name) {
      if (c == '_') c = '-';
    }
    const std::string origin = Origin(path, key.source());
    auto add = [&](const toml::node& v) -> Status {
      std::optional<std::string> text = FlagValue(v);
      if (!text) {
        return Status::Errno(EINVAL, origin + ": value of " + name +
                                         " must be a string, an integer or a boolean");
      }
      args.push_back({"--" + name + "=" + *text, origin});
      return Status::Ok();
    };
    if (const toml::array* list = value.as_array()) {
      if (list->empty()) return Status::Errno(EINVAL, origin + ": " + name + " is an empty list");
      for (const toml::node& v : *list) SFS_RETURN_IF_ERROR(add(v));
    } else {
      SFS_RETURN_IF_ERROR(add(value));
    }
  }
  return args;
}

Result<std::vector<Arg>> ExpandArgs(int argc, const char* const* argv,
                                    const std::string& default_path) {
  std::vector<Arg> command_line;
  std::string config;
  bool named = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view word = argv[i];
    if (word == "--config") {
      if (i + 1 >= argc) return Status::Errno(EINVAL, "missing value for --config");
      config = argv[++i];
      named = true;
    } else if (word.starts_with("--config=")) {
      config = std::string(word.substr(9));
      named = true;
    } else {
      command_line.push_back({std::string(word), ""});
    }
  }
  if (named && config.empty()) return Status::Errno(EINVAL, "empty value for --config");
  std::vector<Arg> out;
  std::error_code ec;
  if (!named && !default_path.empty() && std::filesystem::exists(default_path, ec)) {
    config = default_path;
  }
  if (!config.empty()) {
    SFS_ASSIGN_OR_RETURN(std::vector<Arg> from_file, ReadConfigFile(config));
    std::set<std::string, std::less<>> given;
    for (const Arg& a : command_line) {
      if (std::string_view n = FlagName(a.text); !n.empty()) given.emplace(n);
    }
    for (Arg& a : from_file) {
      if (!given.contains(FlagName(a.text))) out.push_back(std::move(a));
    }
  }
  for (Arg& a : command_line) out.push_back(std::move(a));
  return out;
}

}  // namespace sfs::config
