// Config files for the daemons and the mount (issue 20): /etc/stripefs/*.conf.
//
// A config file is TOML: top-level `key = value` pairs whose keys are the
// long flag names without the dashes (`listen = "0.0.0.0:7700"`,
// `commit-interval-ms = 0`; `_` may stand for `-`). A value is a string, an
// integer, a boolean (written as on/off, the flags' own spelling) or, for a
// flag that may repeat (sfs-oss --ost), an array of those. Tables are not
// used. Every option is also a flag, and a flag on the command line wins: the
// file's entries for a flag the command line names are dropped, so a
// repeatable flag given there replaces the file's list instead of adding to it.
//
// The result is one argument list for the program's own flag parser, each
// argument tagged with where it came from, so that an unknown key or a bad
// value is a one-line error naming the file and line.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace sfs::config {

struct Arg {
  std::string text;    // "--key=value" from a file, or a command-line word as given
  std::string origin;  // "FILE:LINE" for a file's entry, "" for the command line
};

// "FILE:LINE: " for a file's argument, "" for a command-line one: the prefix
// of an error message about it.
std::string Where(const Arg& arg);

// Reads `path` (TOML, as above) into "--key=value" arguments in file order.
// A missing file, a syntax error, a table or an unusable value is an
// EINVAL/ENOENT Status whose message names the file and line.
Result<std::vector<Arg>> ReadConfigFile(const std::string& path);

// The arguments a program parses: those of the config file, then argv[1..].
// The file is the one named by `--config FILE` (or `--config=FILE`, taken out
// of the list), else `default_path` when that exists ("" = none). A named
// file that does not exist is an error; an absent default is not.
Result<std::vector<Arg>> ExpandArgs(int argc, const char* const* argv,
                                    const std::string& default_path);

}  // namespace sfs::config
