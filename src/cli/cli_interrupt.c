// Ctrl-C (SIGINT), SIGTERM and SIGHUP: while an output is being written, the
// first one cancels the write (sluice_write_options.cancelled), so that its
// temporary file is removed and an S3 upload aborted, and then the process
// dies of that signal as it would have; otherwise, or at a second signal,
// it dies at once (reading leaves nothing behind). The signals are blocked
// in every thread and taken by one watcher thread with sigwait, which may
// do what a handler may not; no state is global.
#include <string.h>

#include "cli.h"

/// Dies of `sig` as if it had never been blocked.
static void die_of(int sig) {
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, NULL);
  raise(sig);
}

static void* watch(void* arg) {
  struct cli_interrupt* in = arg;
  for (;;) {
    int sig = 0;
    if (sigwait(&in->signals, &sig) != 0) continue;
    int none = 0;
    if (!atomic_load(&in->writing) || !atomic_compare_exchange_strong(&in->requested, &none, sig))
      die_of(sig);
  }
  return NULL;
}

void cli_interrupt_start(struct cli_interrupt* in) {
  memset(in, 0, sizeof *in);
  sigemptyset(&in->signals);
  sigaddset(&in->signals, SIGINT);
  sigaddset(&in->signals, SIGTERM);
  sigaddset(&in->signals, SIGHUP);
  // Before any other thread starts: they all inherit the mask.
  if (pthread_sigmask(SIG_BLOCK, &in->signals, NULL) != 0) return;
  if (pthread_create(&in->watcher, NULL, watch, in) != 0) {
    pthread_sigmask(SIG_UNBLOCK, &in->signals, NULL);  // signals act as before
    return;
  }
  in->started = 1;
}

void cli_interrupt_stop(struct cli_interrupt* in) {
  if (!in->started) return;
  pthread_cancel(in->watcher);  // sigwait is a cancellation point
  pthread_join(in->watcher, NULL);
  in->started = 0;
}

int cli_interrupt_cancelled(void* user) {
  const struct cli_interrupt* in = user;
  return atomic_load(&in->requested) != 0;
}

void cli_interrupt_writing(struct cli_interrupt* in, int writing) {
  if (in == NULL || !in->started) return;
  atomic_store(&in->writing, writing);
  int sig = atomic_load(&in->requested);
  if (!writing && sig != 0) die_of(sig);  // the write is undone: die as asked
}
