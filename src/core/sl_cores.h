// How many threads to run by default: the cores this process may run on.
#ifndef SL_CORES_H
#define SL_CORES_H

/// The CPUs this process may run on (its affinity mask, as `nproc` and
/// Python's os.process_cpu_count count them; a `taskset` or container
/// cpuset narrows it), clamped to [1, max].
int sl_cores(int max);

#endif
