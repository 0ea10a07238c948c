// Waiting between retries (HTTP and S3 requests, Cassandra pages).
#ifndef SL_SLEEP_H
#define SL_SLEEP_H

/// Sleeps `ms` milliseconds, resuming after a signal interrupts it.
void sl_sleep_ms(long ms);

/// Exponential backoff with jitter before retry `attempt` (0 = the first
/// retry): a random delay in [d/2, d], d being `base_ms` doubled `attempt`
/// times, at most `cap_ms`. `seed` is the caller's rand_r state.
void sl_backoff(int attempt, long base_ms, long cap_ms, unsigned* seed);

#endif
