// Running independent jobs 0 .. n-1 (opening objects, uploading them) on a
// few threads, for work that waits on the network rather than the CPU.
#ifndef SL_PARALLEL_H
#define SL_PARALLEL_H

#include <stdint.h>

#include "sluice.h"

typedef int (*sl_parallel_job)(void* ctx, int64_t i, struct sluice_error* error);

/// Runs job(ctx, i, ...) for i = 0 .. n-1 on up to `max_threads` threads
/// (the caller's included; fewer when threads do not start), each taking
/// the next index. Once a job fails, later indexes are not started; the
/// error returned is that of the lowest index that failed, as a serial loop
/// would report it. *succeeded (NULL = not wanted) gets how many jobs
/// succeeded, which may include some past the failed one.
int sl_parallel_for(int64_t n, int max_threads, sl_parallel_job job, void* ctx,
                    int64_t* succeeded, struct sluice_error* error);

#endif
