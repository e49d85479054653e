// JobIdOf: SFS_JOBID found in an environ block and read from /proc.
#include "client/fuse/job_ids.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace sfs::fuse {
namespace {

using namespace std::string_literals;

TEST(JobIdsTest, FindsTheVariableAnywhereInTheBlock) {
  EXPECT_EQ(JobIdInEnviron("A=1\0SFS_JOBID=job42\0B=2\0"s), "job42");
  EXPECT_EQ(JobIdInEnviron("SFS_JOBID=first\0"s), "first");
  EXPECT_EQ(JobIdInEnviron("X=1\0SFS_JOBID=last"s), "last");  // no final NUL
}

TEST(JobIdsTest, NoVariableOrASimilarNameIsNoJob) {
  EXPECT_EQ(JobIdInEnviron("A=1\0B=2\0"s), "");
  EXPECT_EQ(JobIdInEnviron("XSFS_JOBID=no\0SFS_JOBIDX=no\0"s), "");
  EXPECT_EQ(JobIdInEnviron(""), "");
}

TEST(JobIdsTest, ReadsTheJobOfARealProcess) {
  // A child exec'd with SFS_JOBID set, blocked reading a pipe until we
  // looked. The exec closes its end of the close-on-exec pipe `exec`: our
  // read of it returns then.
  int fds[2], exec[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(pipe2(exec, O_CLOEXEC), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(fds[0], 0);
    close(fds[1]);
    close(exec[0]);
    char* const argv[] = {const_cast<char*>("cat"), nullptr};
    char* const envp[] = {const_cast<char*>("SFS_JOBID=unit-job"), nullptr};
    execve("/bin/cat", argv, envp);
    _exit(127);
  }
  close(fds[0]);
  close(exec[1]);
  char c;
  ASSERT_EQ(read(exec[0], &c, 1), 0);  // EOF: the child has exec'd
  close(exec[0]);
  EXPECT_EQ(JobIdOf(pid), "unit-job");
  EXPECT_EQ(JobIdOf(pid), "unit-job");  // from the cache
  close(fds[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(JobIdOf(0), "");
}

}  // namespace
}  // namespace sfs::fuse
