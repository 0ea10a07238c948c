#include <errno.h>
#include <lzma.h>
#include <string.h>

#include "../codec/sl_codec_alloc.h"
#include "../core/sl_alloc.h"
#include "sl_inflate_codec.h"

struct xz_state {
  lzma_stream xs;
  lzma_allocator allocator;  ///< xs.allocator points here
  const struct sluice_allocator* alloc;
  int stream_done;  ///< the current stream ended; padding or another may follow
  uint64_t padding; ///< zero bytes since it ended
};

static void* xz_create(const struct sluice_allocator* alloc) {
  struct xz_state* st = sl_calloc(alloc, 1, sizeof *st);
  if (st == NULL) return NULL;
  st->alloc = alloc;
  lzma_stream init = LZMA_STREAM_INIT;
  st->xs = init;
  st->allocator.alloc = sl_codec_alloc_n;
  st->allocator.free = sl_codec_free;
  st->allocator.opaque = sl_codec_opaque(alloc);
  st->xs.allocator = &st->allocator;
  return st;
}

/// A decoder for one stream. Streams back to back (`cat a.xz b.xz`) and the
/// stream padding between them are read here rather than by
/// LZMA_CONCATENATED, which calls bytes after the last stream that are no
/// xz data "unexpected end of input" (a truncated file) or "corrupt". No
/// memory limit: the file's dictionary size sets it, at most 1.5 GiB,
/// usually 8 MiB (xz -6). Reinitialising reuses the state.
static int xz_begin(struct xz_state* st) {
  st->stream_done = 0;
  st->padding = 0;
  lzma_ret r = lzma_stream_decoder(&st->xs, UINT64_MAX, 0);
  return r == LZMA_OK ? 0 : ENOMEM;
}

static int xz_reset(void* state) { return xz_begin(state); }

static int corrupt(struct sl_inflate_step* step, const char* what, const char* why) {
  step->what = what;
  step->why = why;
  return EILSEQ;
}

static const uint8_t k_magic[6] = {0xFD, '7', 'z', 'X', 'Z', 0x00};

/// After a stream: its padding (zero bytes, a multiple of four), then the
/// end or the next stream, whose decoder starts. in/in_left move past the
/// padding taken.
static int between_streams(struct xz_state* st, const uint8_t** in, size_t* in_left, int finish,
                           struct sl_inflate_step* step) {
  size_t zeros = 0;
  while (zeros < *in_left && (*in)[zeros] == 0) zeros++;
  st->padding += zeros;
  step->used += zeros;
  *in += zeros;
  *in_left -= zeros;
  if (*in_left == 0 && !finish) return 0;
  if (st->padding % 4 != 0) {
    return corrupt(step, "corrupt xz data", "stream padding is not a multiple of four bytes");
  }
  if (*in_left == 0) {
    step->ended = 1;
    return 0;
  }
  size_t n = *in_left < sizeof k_magic ? *in_left : sizeof k_magic;
  if (memcmp(*in, k_magic, n) != 0) {
    return corrupt(step, "bytes after the last xz stream", "not xz data (trailing garbage)");
  }
  return xz_begin(st);
}

static int xz_step(void* state, const uint8_t* in, size_t in_left, int finish, uint8_t* out,
                   size_t room, struct sl_inflate_step* step) {
  struct xz_state* st = state;
  memset(step, 0, sizeof *step);
  if (st->stream_done) {
    int rc = between_streams(st, &in, &in_left, finish, step);
    if (rc != 0 || st->stream_done) return rc;
  }
  lzma_stream* xs = &st->xs;
  xs->next_in = in;
  xs->avail_in = in_left;
  xs->next_out = out;
  xs->avail_out = room;
  lzma_ret r = lzma_code(xs, finish ? LZMA_FINISH : LZMA_RUN);
  step->used += in_left - xs->avail_in;
  step->made = room - xs->avail_out;
  switch (r) {
    case LZMA_OK: return 0;  // no progress twice gives LZMA_BUF_ERROR
    case LZMA_STREAM_END:  // a stream ends: what follows is looked at next
      st->stream_done = 1;
      return 0;
    case LZMA_MEM_ERROR: return ENOMEM;
    case LZMA_BUF_ERROR:
      return finish ? corrupt(step, "truncated xz data", "the data ends")
                    : corrupt(step, "xz data that does not inflate", "no progress");
    // xz(1)'s words for them
    case LZMA_FORMAT_ERROR: return corrupt(step, "corrupt xz data", "file format not recognized");
    case LZMA_OPTIONS_ERROR: return corrupt(step, "corrupt xz data", "unsupported options");
    case LZMA_DATA_ERROR: return corrupt(step, "corrupt xz data", "compressed data is corrupt");
    default: return corrupt(step, "corrupt xz data", "xz decoding failed");
  }
}

static void xz_destroy(void* state) {
  struct xz_state* st = state;
  if (st == NULL) return;
  lzma_end(&st->xs);
  sl_free(st->alloc, st, sizeof *st);
}

const struct sl_inflate_codec sl_inflate_xz = {
    .create = xz_create,
    .reset = xz_reset,
    .step = xz_step,
    .destroy = xz_destroy,
};
