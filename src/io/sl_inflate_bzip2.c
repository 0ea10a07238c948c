#include <bzlib.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "../codec/sl_codec_alloc.h"
#include "../core/sl_alloc.h"
#include "sl_inflate_codec.h"

struct bzip2_state {
  bz_stream bz;
  const struct sluice_allocator* alloc;
  int live;         ///< BZ2_bzDecompressInit succeeded (End is owed)
  int stream_done;  ///< the current stream ended; another may follow
};

static void* bzip2_create(const struct sluice_allocator* alloc) {
  struct bzip2_state* st = sl_calloc(alloc, 1, sizeof *st);
  if (st == NULL) return NULL;
  st->alloc = alloc;
  return st;
}

/// A fresh stream decoder (libbz2 has no reset: End, then Init).
static int bzip2_begin(struct bzip2_state* st) {
  if (st->live) BZ2_bzDecompressEnd(&st->bz);
  memset(&st->bz, 0, sizeof st->bz);
  st->bz.bzalloc = sl_codec_bzip2_alloc;
  st->bz.bzfree = sl_codec_free;
  st->bz.opaque = sl_codec_opaque(st->alloc);
  st->live = BZ2_bzDecompressInit(&st->bz, 0, 0) == BZ_OK;
  st->stream_done = 0;
  return st->live ? 0 : ENOMEM;
}

static int bzip2_reset(void* state) { return bzip2_begin(state); }

static const char* bzip2_why(int rc) {
  switch (rc) {
    case BZ_DATA_ERROR: return "data integrity error (block or stream CRC)";
    case BZ_DATA_ERROR_MAGIC: return "not bzip2 data (bad stream magic)";
    default: return "bzip2 decoding failed";
  }
}

static int corrupt(struct sl_inflate_step* step, const char* what, const char* why) {
  step->what = what;
  step->why = why;
  return EILSEQ;
}

static int bzip2_step(void* state, const uint8_t* in, size_t in_left, int finish, uint8_t* out,
                      size_t room, struct sl_inflate_step* step) {
  struct bzip2_state* st = state;
  memset(step, 0, sizeof *step);
  if (st->stream_done) {
    if (in_left == 0) {
      step->ended = finish;
      return 0;
    }
    // The next stream of `cat a.bz2 b.bz2` or pbzip2's output, or bytes
    // that are none (bzip2(1) warns "trailing garbage ignored"): said so,
    // not a corrupt stream.
    if (in[0] != 'B' || (in_left > 1 && in[1] != 'Z') || (in_left > 2 && in[2] != 'h')) {
      return corrupt(step, "bytes after the last bzip2 stream",
                     "not bzip2 data (trailing garbage)");
    }
    if (bzip2_begin(st) != 0) return ENOMEM;
  }
  if (!st->live) return ENOMEM;  // a failed Init before
  bz_stream* bz = &st->bz;
  unsigned in_n = in_left < UINT_MAX ? (unsigned)in_left : UINT_MAX;
  unsigned out_n = room < UINT_MAX ? (unsigned)room : UINT_MAX;
  bz->next_in = (char*)(uintptr_t)in;
  bz->avail_in = in_n;
  bz->next_out = (char*)out;
  bz->avail_out = out_n;
  int rc = BZ2_bzDecompress(bz);
  step->used = in_n - bz->avail_in;
  step->made = out_n - bz->avail_out;
  if (rc == BZ_STREAM_END) {
    st->stream_done = 1;
    step->ended = finish && step->used == in_left;
    return 0;
  }
  if (rc == BZ_MEM_ERROR) return ENOMEM;
  if (rc != BZ_OK) return corrupt(step, "corrupt bzip2 data", bzip2_why(rc));
  if (step->used == 0 && step->made == 0) {
    // libbz2 takes all input while it has room to write: no progress means
    // the data ended inside a stream (or, never expected, a stall).
    return finish ? corrupt(step, "truncated bzip2 data", "the data ends")
                  : corrupt(step, "bzip2 data that does not inflate", "no progress");
  }
  return 0;
}

static void bzip2_destroy(void* state) {
  struct bzip2_state* st = state;
  if (st == NULL) return;
  if (st->live) BZ2_bzDecompressEnd(&st->bz);
  sl_free(st->alloc, st, sizeof *st);
}

const struct sl_inflate_codec sl_inflate_bzip2 = {
    .create = bzip2_create,
    .reset = bzip2_reset,
    .step = bzip2_step,
    .destroy = bzip2_destroy,
};
