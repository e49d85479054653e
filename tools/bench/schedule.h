// Where each ior transfer goes: IOR's file layouts as pure functions, so the
// unit tests can check that every byte of the test file is covered exactly
// once for every mode.
//
// A task writes `segments` blocks of `block` bytes, each as block/transfer
// transfers. File per process (-F): the task's own file holds its blocks
// back to back (segment s at s*block). Shared file: N-to-1 strided, as IOR's
// segmented layout: segment s holds one block of every task, task i's block
// at (s*ntasks + i)*block. Random (-z): the same set of offsets, in an order
// that is a random permutation of all the task's transfers.
#pragma once

#include <cstdint>
#include <vector>

namespace sfs::bench {

struct IorGeometry {
  uint64_t block = 0;     // REQUIRES: a positive multiple of transfer
  uint64_t transfer = 0;  // REQUIRES: > 0
  uint64_t segments = 1;  // REQUIRES: > 0
  int ntasks = 1;
  bool file_per_process = false;

  uint64_t TransfersPerTask() const { return segments * (block / transfer); }
  uint64_t BytesPerTask() const { return segments * block; }
  // Size of one test file once written.
  uint64_t FileSize() const {
    return file_per_process ? BytesPerTask() : BytesPerTask() * static_cast<uint64_t>(ntasks);
  }
};

// Offset of task's block of segment `segment` in the file the task uses.
uint64_t BlockOffset(const IorGeometry& g, int task, uint64_t segment);

// Every transfer offset of `task`, in the order they are issued: segment by
// segment, front to back; shuffled (a permutation drawn from seed) when
// random. Reuses out's storage (no allocation once it has grown).
void BuildSchedule(const IorGeometry& g, int task, bool random, uint64_t seed,
                   std::vector<uint64_t>* out);

}  // namespace sfs::bench
