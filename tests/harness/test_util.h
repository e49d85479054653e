// Small helpers shared by the integration tests: the run's random seed (so a
// failure can be replayed), polling a condition with a deadline (the only
// way a test here waits for asynchronous work), running a check as another
// user in a forked child, and byte-buffer helpers.
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sfs::testing {

// The run's seed: $SFS_SEED if set, else random (chosen once per process).
uint64_t TestSeed();
// A seed for the current test: TestSeed() mixed with the test's full name,
// so each test's random stream does not depend on which tests ran before.
uint64_t PerTestSeed();
// True iff $SFS_LONG is set to a non-empty value other than "0".
bool LongRun();

// The current test's name, usable as a file name ("Suite.Name" → "Name",
// parameterised "Name/3" → "Name_3").
std::string TestName();

// The one-line command that re-runs the current test with the same seed.
std::string ReproCommand();

// Calls cond() until it returns true or timeout passes; true iff it did.
// Waits `interval` between calls: this polls a condition, it is not a
// sleep used for synchronisation.
template <typename Cond>
bool PollUntil(Cond cond, std::chrono::milliseconds timeout,
               std::chrono::milliseconds interval = std::chrono::milliseconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

// Runs fn in a forked child that has dropped to uid/gid (supplementary groups
// cleared) and returns what fn returned (by convention 0 or an errno).
// Returns -1 if the child could not be run or died.
int RunAsUser(uid_t uid, gid_t gid, const std::function<int()>& fn);
// The same without changing identity (a separate process, e.g. for POSIX locks).
int RunInChild(const std::function<int()>& fn);
// 0 if rc >= 0, else errno: turns a syscall's result into RunAsUser's convention.
inline int ErrnoOf(long rc) { return rc >= 0 ? 0 : errno; }

// n pseudo-random bytes.
std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n);

// Index of the first byte where a and b differ, or -1 if equal (sizes included).
int64_t FirstDifference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

// Compares two byte strings without printing them: on a mismatch the message
// gives both sizes and the first differing offset. Use instead of EXPECT_EQ
// for file contents. Also for vectors of bytes.
::testing::AssertionResult SameBytes(std::string_view got, std::string_view want);

// Whole-file helpers on local paths (for reference files and mounts).
bool WriteFile(const std::string& path, const std::string& data);
// Reads all of path into *out; false if it cannot be opened.
bool ReadFile(const std::string& path, std::string* out);

// The sfs CLI: $SFS_CLI_BIN, else <build dir>/tools/sfs beside this test's tests/.
std::string SfsBinary();
// Runs a shell command; returns its exit status (-1 if it did not exit),
// with its stdout and stderr appended to *out.
int RunShell(const std::string& cmd, std::string* out);

}  // namespace sfs::testing
