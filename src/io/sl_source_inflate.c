#include "sl_source_inflate.h"

#include <errno.h>
#include <string.h>
#include <isa-l/igzip_lib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createDCtx_advanced: our allocator
#include <zstd.h>

#include "../codec/sl_codec_alloc.h"
#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "sl_source_block.h"

/// Compressed bytes asked of the inner source at a time.
#define INFLATE_INPUT_CHUNK ((int64_t)4 << 20)

struct inflate_source {
  struct sl_source base;  // first
  struct sl_source* compressed;  ///< borrowed
  int zstd;                      ///< else gzip
  /// gzip through ISA-L, which inflates twice as fast as zlib (1.19 s
  /// against 2.50 s for 600 MB of CSV); its CRC and length checks included.
  struct inflate_state* gzip;
  int member_done;     ///< gzip: the last member ended; another may follow
  ZSTD_DCtx* zstd_ctx;
  size_t zstd_last;    ///< ZSTD_decompressStream's last answer: 0 = frame complete
  struct sl_view in;   ///< the compressed bytes being inflated
  int64_t in_used;     ///< of `in`
  int64_t in_offset;   ///< compressed offset of in.data[0] + in.size: the next read
  int in_end;          ///< the compressed object is read to its end
  int end;             ///< and inflated to its end
  struct sl_source_block block;
};

int sl_source_compressed(const uint8_t* head, int64_t n) {
  return (n >= 2 && head[0] == 0x1F && head[1] == 0x8B) ||
         (n >= 4 && head[0] == 0x28 && head[1] == 0xB5 && head[2] == 0x2F && head[3] == 0xFD);
}

/// Ranged reads of a file's mapping cost nothing and can start over; other
/// sources (pipes, HTTP and S3 with their readahead) are read forward.
static int ranged(const struct sl_source* s) {
  return s->ops->read_at != NULL && s->mapped && s->size >= 0;
}

/// The next view of compressed bytes; in_end when there are none.
static int next_input(struct inflate_source* s, struct sluice_error* error) {
  sl_view_release(&s->in);
  s->in_used = 0;
  struct sl_source* c = s->compressed;
  int rc;
  if (ranged(c)) {
    int64_t left = c->size - s->in_offset;
    int64_t n = left < INFLATE_INPUT_CHUNK ? left : INFLATE_INPUT_CHUNK;
    rc = n > 0 ? sl_source_read_at(c, s->in_offset, n, &s->in, error) : 0;
  } else {
    rc = sl_source_read_some(c, INFLATE_INPUT_CHUNK, &s->in, error);
  }
  if (rc != 0) return rc;
  s->in_offset += s->in.size;
  s->in_end = s->in.size == 0;
  return 0;
}

static const char* gzip_message(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid distance too far back";
    case ISAL_INVALID_WRAPPER: return "invalid gzip header";
    case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
    case ISAL_INCORRECT_CHECKSUM: return "incorrect data check (CRC or length)";
    default: return "inflate failed";
  }
}

static int corrupt(struct inflate_source* s, const char* format, const char* why,
                   struct sluice_error* error) {
  int64_t at = s->in_offset - s->in.size + s->in_used;
  return sl_error_set(error, EILSEQ, "%s: %s near compressed byte %lld: %s", s->base.name,
                      format, (long long)at, why);
}

/// Inflates what room the block has from the current input; sets `end` when
/// the compressed input is used up and its last member or frame complete.
static int inflate_some(struct inflate_source* s, struct sluice_error* error) {
  struct sl_source_block* b = &s->block;
  static const uint8_t nothing[1] = {0};  // never a NULL input pointer
  const uint8_t* in = s->in.size > 0 ? s->in.data + s->in_used : nothing;
  size_t in_left = (size_t)(s->in.size - s->in_used);
  size_t used = 0, made = 0;
  if (s->zstd) {
    ZSTD_inBuffer ib = {in, in_left, 0};
    ZSTD_outBuffer ob = {b->data + b->end, (size_t)(b->cap - b->end), 0};
    size_t r = ZSTD_decompressStream(s->zstd_ctx, &ob, &ib);
    if (ZSTD_isError(r)) return corrupt(s, "corrupt zstd data", ZSTD_getErrorName(r), error);
    used = ib.pos;
    made = ob.pos;
    s->in_used += (int64_t)used;
    b->end += (int64_t)made;
    // A call that moved nothing (no input left) would ask for the next
    // frame's header: what counts is the last call that did move bytes.
    if (used > 0 || made > 0) s->zstd_last = r;
    if (s->in_end && made == 0 && ob.pos < ob.size) {
      if (s->zstd_last != 0) return corrupt(s, "truncated zstd frame", "the data ends", error);
      s->end = 1;
    }
    return 0;
  }
  struct inflate_state* g = s->gzip;
  if (s->member_done && in_left > 0) {  // the next member of `cat a.gz b.gz`
    isal_inflate_reset(g);
    g->crc_flag = ISAL_GZIP;
    s->member_done = 0;
  }
  if (s->member_done || (s->in_end && in_left == 0 && g->block_state == ISAL_BLOCK_FINISH)) {
    s->end = s->in_end;  // nothing follows the last member
    return 0;
  }
  g->next_in = (uint8_t*)(uintptr_t)in;
  g->avail_in = (uint32_t)(in_left < UINT32_MAX ? in_left : UINT32_MAX);
  g->next_out = b->data + b->end;
  g->avail_out = (uint32_t)(b->cap - b->end < UINT32_MAX ? b->cap - b->end : UINT32_MAX);
  uint32_t in_before = g->avail_in, out_before = g->avail_out;
  int rc = isal_inflate(g);
  used = in_before - g->avail_in;
  made = out_before - g->avail_out;
  s->in_used += (int64_t)used;
  b->end += (int64_t)made;
  if (rc < 0) return corrupt(s, "corrupt gzip data", gzip_message(rc), error);
  if (g->block_state == ISAL_BLOCK_FINISH) {
    s->member_done = 1;
    if (s->in_end) s->end = 1;
    return 0;
  }
  if (used == 0 && made == 0) {
    // ISA-L takes all input while it has room to write: no progress means
    // the data ended inside a member (or, never expected, a stall: an error
    // rather than a loop).
    return corrupt(s, s->in_end ? "truncated gzip data" : "gzip data that does not inflate",
                   s->in_end ? "the data ends" : "no progress", error);
  }
  return 0;
}

/// Makes at least `need` inflated bytes contiguous in the block, unless the
/// data ends first.
static int fill(struct inflate_source* s, int64_t need, struct sluice_error* error) {
  struct sl_source_block* b = &s->block;
  if (b->end - b->start >= need || s->end) return 0;
  SL_RETURN_NOT_OK(sl_source_block_room(b, need, s->base.alloc, s->base.name, error));
  while (b->end - b->start < need && !s->end) {
    if (s->in_used == s->in.size && !s->in_end) SL_RETURN_NOT_OK(next_input(s, error));
    SL_RETURN_NOT_OK(inflate_some(s, error));
  }
  return 0;
}

static int inflate_view(struct inflate_source* s, int64_t length, int consume,
                        struct sl_view* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (length < 0) {
    return sl_error_set(error, EINVAL, "%s: negative read length %lld", s->base.name,
                        (long long)length);
  }
  SL_RETURN_NOT_OK(fill(s, length, error));
  sl_source_block_view(&s->block, length, consume, out);
  return 0;
}

static int inflate_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                             struct sluice_error* error) {
  return inflate_view((struct inflate_source*)source, length, 1, out, error);
}

static int inflate_peek(struct sl_source* source, int64_t length, struct sl_view* out,
                        struct sluice_error* error) {
  return inflate_view((struct inflate_source*)source, length, 0, out, error);
}

static void inflate_close(struct sl_source* source) {
  struct inflate_source* s = (struct inflate_source*)source;
  const struct sluice_allocator* alloc = source->alloc;
  sl_view_release(&s->in);
  sl_source_block_free(&s->block);
  sl_free(alloc, s->gzip, sizeof *s->gzip);
  ZSTD_freeDCtx(s->zstd_ctx);
  if (source->name != NULL) sl_free(alloc, source->name, strlen(source->name) + 1);
  sl_free(alloc, s, sizeof *s);
}

static const struct sl_source_ops inflate_ops = {
    .read_at = NULL,
    .read_next = inflate_read_next,
    .close = inflate_close,
    .peek = inflate_peek,
    .drop = NULL,
};

/// Starts the decompressor at the first compressed byte.
static int start(struct inflate_source* s, struct sluice_error* error) {
  int rc;
  if (s->zstd) {
    rc = ZSTD_isError(ZSTD_DCtx_reset(s->zstd_ctx, ZSTD_reset_session_only)) ? EINVAL : 0;
  } else {
    isal_inflate_init(s->gzip);
    s->gzip->crc_flag = ISAL_GZIP;
    s->member_done = 0;
    rc = 0;
  }
  if (rc != 0) return sl_error_set(error, rc, "%s: cannot start decompressing", s->base.name);
  s->zstd_last = 0;
  s->in_offset = 0;
  s->in_end = 0;
  s->end = 0;
  return 0;
}

int sl_source_inflate_open(struct sl_source* compressed, struct sl_source** out,
                           struct sluice_error* error) {
  *out = NULL;
  const struct sluice_allocator* alloc = compressed->alloc;
  struct sl_view head;
  SL_RETURN_NOT_OK(sl_source_peek(compressed, 4, &head, error));
  int zstd = head.size >= 4 && head.data[0] == 0x28;
  int known = sl_source_compressed(head.data, head.size);
  sl_view_release(&head);
  if (!known) return sl_error_set(error, EINVAL, "%s: not gzip or zstd data", compressed->name);
  struct inflate_source* s = sl_calloc(alloc, 1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", compressed->name);
  s->base.ops = &inflate_ops;
  s->base.size = -1;
  s->base.alloc = alloc;
  s->base.name = sl_strdup(alloc, compressed->name != NULL ? compressed->name : "");
  s->compressed = compressed;
  s->zstd = zstd;
  if (zstd) {
    ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(alloc)};
    s->zstd_ctx = ZSTD_createDCtx_advanced(mem);
  } else {
    s->gzip = sl_alloc(alloc, sizeof *s->gzip);
  }
  int rc = s->base.name == NULL || (zstd ? s->zstd_ctx == NULL : s->gzip == NULL)
               ? sl_error_set(error, ENOMEM, "%s: out of memory", compressed->name)
               : start(s, error);
  if (rc != 0) {
    inflate_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

int sl_source_inflate_rewindable(const struct sl_source* inflated) {
  return inflated->ops == &inflate_ops &&
         ranged(((const struct inflate_source*)inflated)->compressed);
}

int sl_source_inflate_rewind(struct sl_source* inflated, struct sluice_error* error) {
  if (!sl_source_inflate_rewindable(inflated)) {
    return sl_error_set(error, ENOTSUP, "%s: a compressed stream is read once", inflated->name);
  }
  struct inflate_source* s = (struct inflate_source*)inflated;
  sl_view_release(&s->in);
  s->in_used = 0;
  sl_source_block_free(&s->block);  // views of it keep their bytes
  return start(s, error);
}
