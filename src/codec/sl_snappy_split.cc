// See sl_snappy_split.h. No exceptions, RTTI or C++ runtime calls of its own
// (libsnappy brings its runtime): the object links into C programs as it is.
#include "sl_snappy_split.h"

#include <sys/uio.h>

#include <snappy.h>

int sl_snappy_uncompress_split(const uint8_t* src, size_t n, uint8_t* head, size_t head_len,
                               uint8_t* tail, size_t tail_len) {
  struct iovec iov[2] = {{head, head_len}, {tail, tail_len}};
  return snappy::RawUncompressToIOVec(reinterpret_cast<const char*>(src), n, iov, 2) ? 1 : 0;
}
