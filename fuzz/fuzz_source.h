// The in-memory source every fuzz target reads its input through: views of
// the fuzzer's buffer (no copies), either ranged (read_at and read_next, a
// mapped file's shape) or forward-only (read_next, peek and read_some, a
// pipe's or a remote stream's shape). A forward source may hand read_some
// callers at most `chunk` bytes at a time, so that readers meet message
// boundaries falling between reads, as they do over a network.
#ifndef SLUICE_FUZZ_SOURCE_H
#define SLUICE_FUZZ_SOURCE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/sl_ref.h"
#include "io/sl_source.h"

struct fuzz_source {
  struct sl_source base;
  struct sl_ref ref;  ///< static lifetime: the input outlives every array made from it
  const uint8_t* data;
  int64_t length;
  int64_t cursor;  ///< forward reads: the stream position
  int64_t chunk;   ///< read_some hands out at most this many bytes (0 = no limit)
};

static inline int fuzz_view(struct fuzz_source* f, int64_t offset, int64_t length,
                            struct sl_view* out) {
  out->data = NULL;
  out->size = 0;
  out->owner = NULL;
  if (offset < 0 || length < 0 || offset > f->length || length > f->length - offset) return EIO;
  out->data = f->data + offset;
  out->size = length;
  out->owner = sl_ref_retain(&f->ref);
  return 0;
}

static inline int fuzz_read_at(struct sl_source* source, int64_t offset, int64_t length,
                               struct sl_view* out, struct sluice_error* error) {
  (void)error;
  return fuzz_view((struct fuzz_source*)source, offset, length, out);
}

static inline int fuzz_peek(struct sl_source* source, int64_t length, struct sl_view* out,
                            struct sluice_error* error) {
  struct fuzz_source* f = (struct fuzz_source*)source;
  (void)error;
  int64_t n = f->length - f->cursor;
  if (length < n) n = length;
  return fuzz_view(f, f->cursor, n < 0 ? 0 : n, out);
}

static inline int fuzz_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                                 struct sluice_error* error) {
  struct fuzz_source* f = (struct fuzz_source*)source;
  int rc = fuzz_peek(source, length, out, error);
  if (rc == 0) f->cursor += out->size;
  return rc;
}

static inline int fuzz_read_some(struct sl_source* source, int64_t length, struct sl_view* out,
                                 struct sluice_error* error) {
  struct fuzz_source* f = (struct fuzz_source*)source;
  if (f->chunk > 0 && length > f->chunk) length = f->chunk;
  return fuzz_read_next(source, length, out, error);
}

static inline void fuzz_close(struct sl_source* source) { (void)source; }
static inline void fuzz_ref_destroy(struct sl_ref* ref) { (void)ref; }

static const struct sl_source_ops k_fuzz_ranged_ops = {
    .read_at = fuzz_read_at, .read_next = fuzz_read_next, .close = fuzz_close};
static const struct sl_source_ops k_fuzz_forward_ops = {.read_next = fuzz_read_next,
                                                        .read_some = fuzz_read_some,
                                                        .peek = fuzz_peek,
                                                        .close = fuzz_close};

/// A source over data[0, size): ranged (size known) or forward-only (size
/// -1, as a pipe reports it), named `name` in error messages.
static inline void fuzz_source_init(struct fuzz_source* f, const uint8_t* data, size_t size,
                                    int forward, int64_t chunk, char* name) {
  memset(f, 0, sizeof *f);
  f->base.ops = forward ? &k_fuzz_forward_ops : &k_fuzz_ranged_ops;
  f->base.name = name;
  f->base.size = forward ? -1 : (int64_t)size;
  f->data = data;
  f->length = (int64_t)size;
  f->chunk = chunk;
  sl_ref_init(&f->ref, fuzz_ref_destroy);
}

#endif
