// Ctrl-C (SIGINT), SIGTERM and SIGHUP: while an output is being written, the
// first one cancels the write (sluice_write_options.cancelled), so that its
// temporary file is removed and an S3 upload aborted, and then the process
// dies of that signal as it would have; otherwise, or at a second signal,
// it dies at once (reading leaves nothing behind). The signals are blocked
// in every thread and taken by one watcher thread with sigwait, which may
// do what a handler may not; no state is global. A signal the command was
// started with ignored (nohup, `cmd &` in a script) stays ignored.
#include <string.h>

#include "cli.h"

/// cli_interrupt.state: no write in progress, a write in progress; a
/// positive value is the signal that asked the write in progress to stop.
enum { STATE_IDLE = 0, STATE_WRITING = -1 };

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
    if (atomic_load(&in->stopping)) return NULL;
    // One step from "writing" to "asked to stop", so that the main thread's
    // end of the write sees the request or this thread sees the end.
    int writing = STATE_WRITING;
    if (!atomic_compare_exchange_strong(&in->state, &writing, sig)) die_of(sig);
  }
  return NULL;
}

void cli_interrupt_start(struct cli_interrupt* in) {
  memset(in, 0, sizeof *in);
  atomic_init(&in->state, STATE_IDLE);
  atomic_init(&in->stopping, 0);
  sigemptyset(&in->signals);
  const int taken[] = {SIGINT, SIGTERM, SIGHUP};
  int any = 0;
  for (size_t i = 0; i < sizeof taken / sizeof taken[0]; ++i) {
    struct sigaction now;
    if (sigaction(taken[i], NULL, &now) == 0 && now.sa_handler == SIG_IGN) continue;
    sigaddset(&in->signals, taken[i]);
    in->wake = taken[i];
    any = 1;
  }
  // Before any other thread starts: they all inherit the mask.
  if (!any || pthread_sigmask(SIG_BLOCK, &in->signals, NULL) != 0) return;
  if (pthread_create(&in->watcher, NULL, watch, in) != 0) {
    pthread_sigmask(SIG_UNBLOCK, &in->signals, NULL);  // signals act as before
    return;
  }
  in->started = 1;
}

void cli_interrupt_stop(struct cli_interrupt* in) {
  if (!in->started) return;
  // Woken by one of its own signals, not cancelled: pthread_cancel loads
  // libgcc_s to unwind, a millisecond at the end of every command. A signal
  // that arrives now ends it the same way; the command has done its work.
  atomic_store(&in->stopping, 1);
  pthread_kill(in->watcher, in->wake);
  pthread_join(in->watcher, NULL);
  in->started = 0;
}

int cli_interrupt_cancelled(void* user) {
  struct cli_interrupt* in = user;
  return atomic_load(&in->state) > 0;
}

void cli_interrupt_write_begin(struct cli_interrupt* in) {
  if (in != NULL && in->started) atomic_store(&in->state, STATE_WRITING);
}

void cli_interrupt_write_end(struct cli_interrupt* in, int rc) {
  if (in == NULL || !in->started) return;
  int sig = atomic_exchange(&in->state, STATE_IDLE);
  // Undone: die as asked. A write that went through before the request
  // reached it (its commit was under way) stands, and the command ends as
  // it would have.
  if (sig > 0 && rc != 0) die_of(sig);
}
