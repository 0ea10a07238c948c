// Running independent jobs 0 .. n-1 (opening objects, uploading them) on a
// few threads, for work that waits on the network rather than the CPU.
#ifndef SL_PARALLEL_H
#define SL_PARALLEL_H

#include <stdint.h>

#include "sluice.h"

typedef int (*sl_parallel_job)(void* ctx, int64_t i, struct sluice_error* error);

/// Runs job(ctx, i, ...) for i = 0 .. n-1 on up to `max_threads` threads
/// (the caller's included; fewer when threads do not start), each taking
/// the next index; job 0 always runs on the calling thread. Once a job
/// fails, later indexes are not started; the error returned is that of the
/// lowest index that failed, as a serial loop would report it. *succeeded (NULL = not wanted) gets how many jobs
/// succeeded, which may include some past the failed one.
int sl_parallel_for(int64_t n, int max_threads, sl_parallel_job job, void* ctx,
                    int64_t* succeeded, struct sluice_error* error);

/// sl_parallel_for, and while the calling thread waits for the others to
/// finish their jobs it calls poll(poll_user) every 50 ms (its result is
/// not used): a cancel hook that only the calling thread can answer (the
/// Python package's, which runs the signal handlers) is asked then too, and
/// the jobs, which ask it themselves, see the answer.
int sl_parallel_for_polled(int64_t n, int max_threads, sl_parallel_job job, void* ctx,
                           int (*poll)(void* user), void* poll_user, int64_t* succeeded,
                           struct sluice_error* error);

#endif
