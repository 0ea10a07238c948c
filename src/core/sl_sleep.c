#include "sl_sleep.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

void sl_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

void sl_backoff(int attempt, long base_ms, long cap_ms, unsigned* seed) {
  long d = base_ms;
  for (int i = 0; i < attempt && d < cap_ms; ++i) d *= 2;
  if (d > cap_ms) d = cap_ms;
  long jitter = (long)(rand_r(seed) % (unsigned)(d / 2 + 1));
  sl_sleep_ms(d / 2 + jitter);
}
