// How many threads to run by default: the cores this process may run on.
#ifndef SL_CORES_H
#define SL_CORES_H

/// The CPUs this process may run on (its affinity mask, as `nproc` and
/// Python's os.process_cpu_count count them; a `taskset` or container
/// cpuset narrows it), at most its cgroup CPU quota, v2 or v1 (`docker
/// --cpus`, Kubernetes CPU limits, as Rust's available_parallelism and the
/// JVM count it), clamped to [1, max].
int sl_cores(int max);

/// The CPUs a cgroup v2 CPU quota allows, rounded up: the smallest of the
/// `cpu.max` files ("<quota> <period>", or "max") of the process's cgroup
/// and its ancestors under `root` (the cgroup2 mount, /sys/fs/cgroup).
/// `self_cgroup` is the text of /proc/self/cgroup, whose "0::<path>" line
/// names the cgroup. 0 when there is no quota or it cannot be read.
int sl_cores_quota(const char* self_cgroup, const char* root);

/// The same for a cgroup v1 quota: cpu.cfs_quota_us over cpu.cfs_period_us
/// (quota -1: none) of the cgroup that the "cpu" controller's line of
/// `self_cgroup` names and its ancestors, found under the mount of that
/// hierarchy listed in the file `mountinfo` (/proc/self/mountinfo). A mount
/// whose root is not above the cgroup (a container without a cgroup
/// namespace) is read at its mount point. 0 when there is no quota.
int sl_cores_quota_v1(const char* self_cgroup, const char* mountinfo);

#endif
