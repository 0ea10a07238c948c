#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // sched_getaffinity, CPU_COUNT
#endif
#include "sl_cores.h"

#if defined(__linux__)
#include <sched.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/// CPUs allowed by one cpu.max file, rounded up; 0 for "max" or no file.
static long quota_of(const char* path) {
  FILE* f = fopen(path, "re");
  if (f == NULL) return 0;
  char quota[32] = "";
  long period = 0;
  int got = fscanf(f, "%31s %ld", quota, &period);
  fclose(f);
  if (got != 2 || period <= 0 || strcmp(quota, "max") == 0) return 0;
  char* end = NULL;
  long q = strtol(quota, &end, 10);
  if (end == quota || *end != '\0' || q <= 0) return 0;
  return (q + period - 1) / period;
}

int sl_cores_quota(const char* self_cgroup, const char* root) {
  // The unified hierarchy's line: "0::/some/path".
  const char* line = self_cgroup;
  while (line != NULL && strncmp(line, "0::", 3) != 0) {
    line = strchr(line, '\n');
    if (line != NULL) ++line;
  }
  if (line == NULL) return 0;
  line += 3;
  size_t n = strcspn(line, "\n");
  char path[4096];
  size_t root_len = strlen(root);
  if (root_len + n + sizeof "/cpu.max" >= sizeof path) return 0;
  memcpy(path, root, root_len);
  memcpy(path + root_len, line, n);
  size_t len = root_len + n;
  while (len > root_len && path[len - 1] == '/') --len;
  long least = 0;
  for (;;) {  // the cgroup, then each parent up to the root
    memcpy(path + len, "/cpu.max", sizeof "/cpu.max");
    long q = quota_of(path);
    if (q > 0 && (least == 0 || q < least)) least = q;
    if (len == root_len) break;
    while (len > root_len && path[len - 1] != '/') --len;
    while (len > root_len && path[len - 1] == '/') --len;
  }
  return least > 1 << 20 ? 1 << 20 : (int)least;
}

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
#if defined(__linux__)
  // A quota lets all CPUs run the process, but only for so much time: more
  // threads than it allows take turns (and are throttled), not work more.
  char text[4096];
  FILE* f = fopen("/proc/self/cgroup", "re");
  if (f != NULL) {
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    long quota = sl_cores_quota(text, "/sys/fs/cgroup");
    if (quota > 0 && (n < 1 || quota < n)) n = quota;
  }
#endif
  if (n < 1) n = 1;
  return n > max ? max : (int)n;
}
