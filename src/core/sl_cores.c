#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // sched_getaffinity, CPU_COUNT
#endif
#include "sl_cores.h"

#if defined(__linux__)
#include <sched.h>
#endif
#include <unistd.h>

int sl_cores(int max) {
  long n = 0;
#if defined(__linux__) && defined(CPU_COUNT)
  // The online count alone would start a thread per host CPU in a process
  // pinned to a few of them, each waiting on the others.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
#endif
  if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return n > max ? max : (int)n;
}
