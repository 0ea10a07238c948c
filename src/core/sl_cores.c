#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // sched_getaffinity, CPU_ALLOC
#endif
#include "sl_cores.h"

#if defined(__linux__)
#include <sched.h>
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CGROUP_PATH_MAX 4096

/// The one integer of a file (cgroup v1's cpu.cfs_* files); 0 when absent.
static long long_of(const char* path) {
  FILE* f = fopen(path, "re");
  if (f == NULL) return 0;
  long v = 0;
  if (fscanf(f, "%ld", &v) != 1) v = 0;
  fclose(f);
  return v;
}

/// CPUs allowed by the cgroup directory path[0, len), rounded up; 0 for no
/// quota or none readable. v2: one cpu.max file, "<quota> <period>" or "max".
static long quota_v2(char* path, size_t len) {
  if (len + sizeof "/cpu.max" > CGROUP_PATH_MAX) return 0;
  memcpy(path + len, "/cpu.max", sizeof "/cpu.max");
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

/// v1: cpu.cfs_quota_us (-1 for none) over cpu.cfs_period_us.
static long quota_v1(char* path, size_t len) {
  if (len + sizeof "/cpu.cfs_period_us" > CGROUP_PATH_MAX) return 0;
  memcpy(path + len, "/cpu.cfs_quota_us", sizeof "/cpu.cfs_quota_us");
  long q = long_of(path);
  memcpy(path + len, "/cpu.cfs_period_us", sizeof "/cpu.cfs_period_us");
  long period = long_of(path);
  if (q <= 0 || period <= 0) return 0;
  return (q + period - 1) / period;
}

/// The smallest quota of the cgroup directory path[0, len) and each parent
/// up to its hierarchy's mount, path[0, top): a parent's quota limits its
/// children too.
static int least_quota(char* path, size_t top, size_t len, long (*quota_in)(char*, size_t)) {
  while (len > top && path[len - 1] == '/') --len;
  long least = 0;
  for (;;) {
    long q = quota_in(path, len);
    if (q > 0 && (least == 0 || q < least)) least = q;
    if (len <= top) break;
    while (len > top && path[len - 1] != '/') --len;
    while (len > top && path[len - 1] == '/') --len;
  }
  return least > 1 << 20 ? 1 << 20 : (int)least;
}

/// The path of /proc/self/cgroup's line whose controller list (the middle
/// field) has the item `controller` ("" for the v2 line, "0::<path>"):
/// *n bytes at the result, or NULL.
static const char* cgroup_of(const char* self_cgroup, const char* controller, size_t* n) {
  size_t want = strlen(controller);
  for (const char* line = self_cgroup; line != NULL && *line != '\0';) {
    const char* eol = line + strcspn(line, "\n");
    const char* first = memchr(line, ':', (size_t)(eol - line));
    const char* second = first == NULL ? NULL : memchr(first + 1, ':', (size_t)(eol - first - 1));
    if (second != NULL) {
      int found = want == 0 ? second == first + 1 && strncmp(line, "0:", 2) == 0 : 0;
      for (const char* item = first + 1; want > 0 && item < second && !found;) {
        const char* comma = memchr(item, ',', (size_t)(second - item));
        const char* stop = comma != NULL ? comma : second;
        found = (size_t)(stop - item) == want && memcmp(item, controller, want) == 0;
        item = stop + 1;
      }
      if (found) {
        *n = (size_t)(eol - second - 1);
        return second + 1;
      }
    }
    line = *eol == '\n' ? eol + 1 : NULL;
  }
  return NULL;
}

int sl_cores_quota(const char* self_cgroup, const char* root) {
  size_t n;
  const char* group = cgroup_of(self_cgroup, "", &n);
  if (group == NULL) return 0;
  char path[CGROUP_PATH_MAX];
  size_t root_len = strlen(root);
  if (root_len + n >= sizeof path) return 0;
  memcpy(path, root, root_len);
  memcpy(path + root_len, group, n);
  return least_quota(path, root_len, root_len + n, quota_v2);
}

/// Undoes mountinfo's octal escapes (a space is "\040") in place.
static void unescape_octal(char* s) {
  char* out = s;
  for (const char* in = s; *in != '\0'; ++in) {
    if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' &&
        in[3] >= '0' && in[3] <= '7') {
      *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
      in += 3;
    } else {
      *out++ = *in;
    }
  }
  *out = '\0';
}

/// Whether the mountinfo line is a cgroup v1 mount of the cpu controller;
/// if so its root within the hierarchy and its mount point, unescaped.
/// Line: "<id> <parent> <dev> <root> <mount point> <options> [tags] - <type>
/// <source> <super options>".
static int cpu_mount(char* line, char** root, char** point) {
  char* fields[5];
  char* save = NULL;
  char* tok = strtok_r(line, " \n", &save);
  int k = 0;
  for (; tok != NULL && k < 5; tok = strtok_r(NULL, " \n", &save)) fields[k++] = tok;
  if (k < 5) return 0;
  while (tok != NULL && strcmp(tok, "-") != 0) tok = strtok_r(NULL, " \n", &save);
  char* type = tok == NULL ? NULL : strtok_r(NULL, " \n", &save);
  char* source = type == NULL ? NULL : strtok_r(NULL, " \n", &save);
  char* options = source == NULL ? NULL : strtok_r(NULL, " \n", &save);
  if (options == NULL || strcmp(type, "cgroup") != 0) return 0;
  int cpu = 0;
  for (char* o = strtok_r(options, ",", &save); o != NULL && !cpu; o = strtok_r(NULL, ",", &save))
    cpu = strcmp(o, "cpu") == 0;
  if (!cpu) return 0;
  unescape_octal(fields[3]);
  unescape_octal(fields[4]);
  *root = fields[3];
  *point = fields[4];
  return 1;
}

int sl_cores_quota_v1(const char* self_cgroup, const char* mountinfo) {
  size_t n;
  const char* group = cgroup_of(self_cgroup, "cpu", &n);
  if (group == NULL) return 0;
  FILE* f = fopen(mountinfo, "re");
  if (f == NULL) return 0;
  char line[CGROUP_PATH_MAX];
  char path[CGROUP_PATH_MAX];
  int quota = 0, whole = 1;
  while (quota == 0 && fgets(line, sizeof line, f) != NULL) {
    int was_whole = whole;
    whole = strchr(line, '\n') != NULL;
    char *root, *point;
    if (!was_whole || !cpu_mount(line, &root, &point)) continue;  // a long line's rest
    // The cgroup's path is relative to the hierarchy's root; the mount shows
    // the hierarchy from `root` down. A container without its own cgroup
    // namespace sees its host path in /proc/self/cgroup but its own cgroup
    // mounted as the root: then the mount point is the cgroup.
    size_t root_len = strcmp(root, "/") == 0 ? 0 : strlen(root);
    const char* rel = group;
    size_t rel_len = n;
    if (root_len > 0) {
      int under = n >= root_len && memcmp(group, root, root_len) == 0 &&
                  (n == root_len || group[root_len] == '/');
      rel = under ? group + root_len : "";
      rel_len = under ? n - root_len : 0;
    }
    size_t point_len = strlen(point);
    if (point_len + rel_len >= sizeof path) continue;
    memcpy(path, point, point_len);
    memcpy(path + point_len, rel, rel_len);
    quota = least_quota(path, point_len, point_len + rel_len, quota_v1);
  }
  fclose(f);
  return quota;
}

int sl_cores(int max) {
  long n = 0;
#if defined(__linux__) && defined(CPU_ALLOC)
  // The online count alone would start a thread per host CPU in a process
  // pinned to a few of them, each waiting on the others. The mask is sized
  // as the kernel's: a fixed cpu_set_t holds 1,024 CPUs, and the call fails
  // (EINVAL) on a machine with more.
  for (int cpus = 1024; n == 0 && cpus <= (1 << 20); cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC((size_t)cpus);
    if (set == NULL) break;
    size_t size = CPU_ALLOC_SIZE((size_t)cpus);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) n = CPU_COUNT_S(size, set);
    int again = n == 0 && errno == EINVAL;
    CPU_FREE(set);
    if (!again) break;
  }
#endif
  if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
#if defined(__linux__)
  // A quota lets all CPUs run the process, but only for so much time: more
  // threads than it allows take turns (and are throttled), not work more.
  // A hybrid system has both hierarchies: the cpu controller is in one.
  char text[4096];
  FILE* f = fopen("/proc/self/cgroup", "re");
  if (f != NULL) {
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    long v2 = sl_cores_quota(text, "/sys/fs/cgroup");
    long v1 = sl_cores_quota_v1(text, "/proc/self/mountinfo");
    if (v2 > 0 && (n < 1 || v2 < n)) n = v2;
    if (v1 > 0 && (n < 1 || v1 < n)) n = v1;
  }
#endif
  if (n < 1) n = 1;
  return n > max ? max : (int)n;
}
