#include "sl_source_inflate.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <isa-l/igzip_lib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createDCtx_advanced: our allocator
#include <zstd.h>

#include "../codec/sl_codec_alloc.h"
#include "../codec/sl_zstd_window.h"
#include "../core/sl_alloc.h"
#include "../core/sl_block_pool.h"
#include "../core/sl_error.h"
#include "sl_inflate_codec.h"
#include "sl_source_http.h"
#include "sl_source_block.h"

/// Compressed bytes asked of the inner source at a time.
#define INFLATE_INPUT_CHUNK ((int64_t)4 << 20)
/// ... and by ranged reads while sampling a remote object's head (one GET
/// for a CSV sample of 1 MiB compressed more than 1.06 times; a whole HTTP
/// readahead part, so that reading on from there fetches no byte twice).
#define INFLATE_SAMPLE_INPUT ((int64_t)1 << 20)
/// Inflated bytes per chunk, and chunks inflated ahead of the reader: a
/// thread of its own inflates while the reader's thread parses (inflation
/// is most of the work: 80% of a compressed CSV scan), in bounded memory.
#define INFLATE_CHUNK ((int64_t)4 << 20)
#define INFLATE_AHEAD 3
/// A peek before the first read inflates at least this much at a time.
#define INFLATE_PEEK_MIN ((int64_t)64 << 10)

struct inflate_chunk {
  struct sl_ref* ref;  ///< owns data (views add their references)
  uint8_t* data;
  int64_t size;
};

struct inflate_source {
  struct sl_source base;  // first
  struct sl_source* compressed;  ///< borrowed, unless `owns`
  int owns;                      ///< closes `compressed` (sl_source_inflate_adopt)

  // The decoder: the inflating thread's alone while it runs.
  int zstd;                      ///< else gzip, or `codec`
  /// gzip through ISA-L, which inflates twice as fast as zlib (1.19 s
  /// against 2.50 s for 600 MB of CSV); its CRC and length checks included.
  struct inflate_state* gzip;
  int member_done;     ///< gzip: the last member ended; another may follow
  ZSTD_DCtx* zstd_ctx;
  size_t zstd_last;    ///< ZSTD_decompressStream's last answer: 0 = frame complete
  /// bzip2 and xz: their decoder (sl_inflate_codec.h) and its state.
  const struct sl_inflate_codec* codec;
  void* codec_state;
  struct sl_view in;   ///< the compressed bytes being inflated
  int64_t in_used;     ///< of `in`
  int64_t in_offset;   ///< compressed offset of in.data[0] + in.size: the next read
  int in_end;          ///< the compressed object is read to its end
  int end;             ///< and inflated to its end
  /// A remote object's head was sampled by ranged reads: its forward reads
  /// go on from in_offset (sl_source_seek) before the next one.
  int seek_needed;
  int decoding;        ///< the decoder is set up at the object's start (start())

  // Between the threads, under `lock`.
  pthread_mutex_t lock;
  pthread_cond_t changed;
  pthread_t thread;
  int running;         ///< the thread was started (and is not joined yet)
  int stop;            ///< asks the thread to finish
  struct inflate_chunk ready[INFLATE_AHEAD];
  /// Chunks come back here when the reader is done with them (their pages
  /// stay mapped: fresh memory costs a fault per page).
  struct sl_block_pool* pool;
  int ready_first, ready_count;
  int done;            ///< the thread finished: after `ready`, the end or `failure`
  struct sluice_error failure;

  // The reader's.
  int consumed;              ///< a read (not a peek) took bytes: no trim after that
  struct inflate_chunk cur;  ///< the chunk being read
  int64_t cur_used;
  /// Bytes gathered from several chunks for a read_next or peek that wants
  /// them contiguous; reads take them before `cur`.
  struct sl_source_block block;
};

/// Ranged reads of a file's mapping cost nothing and can start over; other
/// sources (pipes, HTTP and S3 with their readahead) are read forward.
static int ranged(const struct sl_source* s) {
  return s->ops->read_at != NULL && s->mapped && s->size >= 0;
}

static int start(struct inflate_source* s, struct sluice_error* error);
static int compressed_rewindable(const struct sl_source* c);
static int back_to_start(struct inflate_source* s, struct sluice_error* error);

/// The next view of compressed bytes; in_end when there are none.
/// `sampling`: a peek before the first read (the reader's open) wants a
/// little of the head: a remote object gives it by a ranged read instead of
/// starting a download of all of it (which a dataset's other objects then
/// held, or fetched twice, until their turn).
static int next_input(struct inflate_source* s, int sampling, struct sluice_error* error) {
  struct sl_source* c = s->compressed;
  // A file's inflated bytes are not read again: their pages leave the
  // resident set (a dataset of many .csv.gz files otherwise keeps each one's
  // compressed bytes in RSS until the end).
  if (s->in.size > 0 && ranged(c)) sl_source_drop(c, s->in_offset - s->in.size, s->in.size);
  sl_view_release(&s->in);
  s->in_used = 0;
  int rc;
  int by_range = c->ops->read_at != NULL && c->size >= 0 &&
                 (ranged(c) || (sampling && c->ops->seek != NULL));
  if (by_range) {
    int64_t left = c->size - s->in_offset;
    int64_t chunk = ranged(c) ? INFLATE_INPUT_CHUNK : INFLATE_SAMPLE_INPUT;
    int64_t n = left < chunk ? left : chunk;
    rc = n > 0 ? sl_source_read_at(c, s->in_offset, n, &s->in, error) : 0;
    if (!ranged(c)) s->seek_needed = 1;
  } else {
    rc = s->seek_needed ? sl_source_seek(c, s->in_offset, error) : 0;
    s->seek_needed = 0;
    if (rc == 0) rc = sl_source_read_some(c, INFLATE_INPUT_CHUNK, &s->in, error);
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

/// Inflates from the current input into out[0, room) (*made bytes); sets
/// `end` when the compressed input is used up and its last member or frame
/// complete.
static int inflate_into(struct inflate_source* s, uint8_t* out, int64_t room, int64_t* made_out,
                        struct sluice_error* error) {
  *made_out = 0;
  static const uint8_t nothing[1] = {0};  // never a NULL input pointer
  const uint8_t* in = s->in.size > 0 ? s->in.data + s->in_used : nothing;
  size_t in_left = (size_t)(s->in.size - s->in_used);
  size_t used = 0, made = 0;
  if (s->codec != NULL) {
    struct sl_inflate_step step;
    int rc = s->codec->step(s->codec_state, in, in_left, s->in_end, out, (size_t)room, &step);
    s->in_used += (int64_t)step.used;
    *made_out = (int64_t)step.made;
    if (rc == ENOMEM) {
      return sl_error_set(error, ENOMEM, "%s: out of memory inflating", s->base.name);
    }
    if (rc != 0) return corrupt(s, step.what, step.why, error);
    if (step.ended) s->end = 1;
    return 0;
  }
  if (s->zstd) {
    ZSTD_inBuffer ib = {in, in_left, 0};
    ZSTD_outBuffer ob = {out, (size_t)room, 0};
    size_t r = ZSTD_decompressStream(s->zstd_ctx, &ob, &ib);
    if (ZSTD_isError(r)) {
      char why[160];
      if (sl_zstd_window_error(r, in, in_left, why, sizeof why)) {
        int64_t at = s->in_offset - s->in.size + s->in_used;
        return sl_error_set(error, ENOTSUP, "%s: near compressed byte %lld: %s", s->base.name,
                            (long long)at, why);
      }
      return corrupt(s, "corrupt zstd data", ZSTD_getErrorName(r), error);
    }
    used = ib.pos;
    made = ob.pos;
    s->in_used += (int64_t)used;
    *made_out = (int64_t)made;
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
    // ... or bytes that are no gzip member (gzip(1) warns "trailing garbage
    // ignored"): an error that says so, not a truncated member.
    // Zero padding (tar pads so) too: gzip(1) skips it; pyarrow, polars
    // and DuckDB refuse it, as here.
    if (in[0] != 0x1f || (in_left > 1 && in[1] != 0x8b))
      return corrupt(s, "bytes after the last gzip member",
                     in[0] == 0 ? "not gzip data (trailing garbage: zero padding is not read)"
                                : "not gzip data (trailing garbage)",
                     error);
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
  g->next_out = out;
  g->avail_out = (uint32_t)(room < UINT32_MAX ? room : UINT32_MAX);
  uint32_t in_before = g->avail_in, out_before = g->avail_out;
  int rc = isal_inflate(g);
  used = in_before - g->avail_in;
  made = out_before - g->avail_out;
  s->in_used += (int64_t)used;
  *made_out = (int64_t)made;
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

/* ---- The inflating thread --------------------------------------------------- */

static void chunk_release(struct inflate_chunk* c) {
  sl_ref_release(c->ref);
  memset(c, 0, sizeof *c);
}

/// Inflates one chunk (full, or short at the end): 0, or an error.
/// `sampling`: see next_input.
static int inflate_chunk(struct inflate_source* s, struct inflate_chunk* c, int64_t size,
                         int sampling, struct sluice_error* error) {
  int recycled;
  if (!s->decoding) SL_RETURN_NOT_OK(start(s, error));
  c->ref = sl_block_pool_get(s->pool, (size_t)size, &c->data, &recycled);
  if (c->ref == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory inflating", s->base.name);
  }
  c->size = 0;
  while (c->size < size && !s->end) {
    if (s->in_used == s->in.size && !s->in_end) SL_RETURN_NOT_OK(next_input(s, sampling, error));
    int64_t made;
    SL_RETURN_NOT_OK(inflate_into(s, c->data + c->size, size - c->size, &made, error));
    c->size += made;
  }
  return 0;
}

static void* inflate_main(void* arg) {
  struct inflate_source* s = arg;
  for (;;) {
    pthread_mutex_lock(&s->lock);
    while (s->ready_count == INFLATE_AHEAD && !s->stop) pthread_cond_wait(&s->changed, &s->lock);
    int stop = s->stop;
    pthread_mutex_unlock(&s->lock);
    if (stop) break;
    struct inflate_chunk c = {0};
    struct sluice_error error;
    memset(&error, 0, sizeof error);
    int rc = inflate_chunk(s, &c, INFLATE_CHUNK, 0, &error);
    pthread_mutex_lock(&s->lock);
    if (c.size > 0) {
      s->ready[(s->ready_first + s->ready_count) % INFLATE_AHEAD] = c;
      s->ready_count++;
    } else {
      chunk_release(&c);
    }
    int finished = rc != 0 || s->end;
    if (finished) {
      s->done = 1;
      if (rc != 0) s->failure = error;
    }
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    if (finished) break;
  }
  return NULL;
}

/// Stops and joins the thread, dropping the chunks it made ahead.
static void stop_thread(struct inflate_source* s) {
  if (s->running) {
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->running = 0;
  }
  while (s->ready_count > 0) {
    chunk_release(&s->ready[s->ready_first]);
    s->ready_first = (s->ready_first + 1) % INFLATE_AHEAD;
    s->ready_count--;
  }
  s->ready_first = 0;
  s->stop = 0;
}

/* ---- The reader's side -------------------------------------------------------- */

/// Makes `cur` a chunk with bytes left, waiting for the thread (started on
/// the first read); leaves it empty at the end. 0, or the thread's error.
/// A peek of `peek` > 0 bytes before the first read (a reader's open,
/// sampling the head) inflates just those on the caller's thread instead:
/// the objects of a dataset are all opened before the scan, and each one's
/// thread used to inflate three chunks of 4 MiB ahead and hold them until
/// its turn (20 csv.gz objects of 16 MB: 650 MB).
static int next_chunk(struct inflate_source* s, int64_t peek, struct sluice_error* error) {
  chunk_release(&s->cur);
  s->cur_used = 0;
  if (peek > 0 && !s->running && !s->done) {
    int64_t size = peek < INFLATE_PEEK_MIN ? INFLATE_PEEK_MIN
                   : peek > INFLATE_CHUNK  ? INFLATE_CHUNK
                                           : peek;
    int rc = inflate_chunk(s, &s->cur, size, 1, error);
    if (rc != 0 || s->end) {  // what the thread would have left: no more chunks
      s->done = 1;
      if (rc != 0) s->failure = *error;
    }
    return rc;
  }
  if (!s->running && !s->done) {
    if (pthread_create(&s->thread, NULL, inflate_main, s) != 0) {
      return sl_error_set(error, EAGAIN, "%s: cannot start a thread to inflate", s->base.name);
    }
    s->running = 1;
  }
  pthread_mutex_lock(&s->lock);
  while (s->ready_count == 0 && !s->done) pthread_cond_wait(&s->changed, &s->lock);
  int rc = 0;
  if (s->ready_count > 0) {
    s->cur = s->ready[s->ready_first];
    memset(&s->ready[s->ready_first], 0, sizeof s->ready[0]);
    s->ready_first = (s->ready_first + 1) % INFLATE_AHEAD;
    s->ready_count--;
    pthread_cond_broadcast(&s->changed);
  } else if (s->failure.code != 0) {
    *error = s->failure;
    rc = s->failure.code;
  }
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/// A view of up to `length` bytes where they are: the gathered block first,
/// else the current chunk (no copy). Empty at the end.
static int view_some(struct inflate_source* s, int64_t length, int consume, struct sl_view* out,
                     struct sluice_error* error) {
  if (s->block.end > s->block.start) {
    sl_source_block_view(&s->block, length, consume, out);
    return 0;
  }
  if (s->cur_used == s->cur.size) SL_RETURN_NOT_OK(next_chunk(s, consume ? 0 : length, error));
  int64_t n = s->cur.size - s->cur_used;
  if (n > length) n = length;
  out->data = n > 0 ? s->cur.data + s->cur_used : (const uint8_t*)"";
  out->size = n;
  out->owner = n > 0 ? sl_ref_retain(s->cur.ref) : NULL;
  if (consume) s->cur_used += n;
  return 0;
}

/// A view of `length` contiguous bytes (fewer only at the end): where they
/// lie in one chunk, else gathered into the block.
static int view_contiguous(struct inflate_source* s, int64_t length, int consume,
                           struct sl_view* out, struct sluice_error* error) {
  struct sl_source_block* b = &s->block;
  if (b->end == b->start) {
    if (s->cur_used == s->cur.size) SL_RETURN_NOT_OK(next_chunk(s, consume ? 0 : length, error));
    if (s->cur.size - s->cur_used >= length || s->cur.size == 0) {
      return view_some(s, length, consume, out, error);
    }
  }
  if (b->end - b->start < length) {
    SL_RETURN_NOT_OK(sl_source_block_room(b, length, s->base.alloc, s->base.name, error));
    while (b->end - b->start < length) {
      int64_t missing = length - (b->end - b->start);
      if (s->cur_used == s->cur.size) {
        SL_RETURN_NOT_OK(next_chunk(s, consume ? 0 : missing, error));
      }
      int64_t n = s->cur.size - s->cur_used;
      if (n == 0) break;  // the end
      if (n > missing) n = missing;
      memcpy(b->data + b->end, s->cur.data + s->cur_used, (size_t)n);
      b->end += n;
      s->cur_used += n;
    }
  }
  sl_source_block_view(b, length, consume, out);
  return 0;
}

static int check_length(const struct inflate_source* s, int64_t length, struct sl_view* out,
                        struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (length >= 0) return 0;
  return sl_error_set(error, EINVAL, "%s: negative read length %lld", s->base.name,
                      (long long)length);
}

static int inflate_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                             struct sluice_error* error) {
  struct inflate_source* s = (struct inflate_source*)source;
  SL_RETURN_NOT_OK(check_length(s, length, out, error));
  s->consumed = 1;
  return view_contiguous(s, length, 1, out, error);
}

static int inflate_read_some(struct sl_source* source, int64_t length, struct sl_view* out,
                             struct sluice_error* error) {
  struct inflate_source* s = (struct inflate_source*)source;
  SL_RETURN_NOT_OK(check_length(s, length, out, error));
  s->consumed = 1;
  return view_some(s, length, 1, out, error);
}

static int inflate_peek(struct sl_source* source, int64_t length, struct sl_view* out,
                        struct sluice_error* error) {
  struct inflate_source* s = (struct inflate_source*)source;
  SL_RETURN_NOT_OK(check_length(s, length, out, error));
  return view_contiguous(s, length, 0, out, error);
}

/// The decoder's state goes (ISA-L's is 85 KiB, a zstd context holds its
/// window, bzip2's its 900 kB block, xz's its dictionary); start() makes it
/// again.
static void free_decoder(struct inflate_source* s) {
  if (s->codec_state != NULL) s->codec->destroy(s->codec_state);
  s->codec_state = NULL;
  sl_free(s->base.alloc, s->gzip, sizeof *s->gzip);
  s->gzip = NULL;
  ZSTD_freeDCtx(s->zstd_ctx);
  s->zstd_ctx = NULL;
  s->decoding = 0;
}

static void inflate_close(struct sl_source* source) {
  struct inflate_source* s = (struct inflate_source*)source;
  const struct sluice_allocator* alloc = source->alloc;
  stop_thread(s);
  pthread_cond_destroy(&s->changed);
  pthread_mutex_destroy(&s->lock);
  chunk_release(&s->cur);
  sl_view_release(&s->in);
  sl_source_block_free(&s->block);
  free_decoder(s);
  sl_block_pool_close(s->pool);
  if (s->owns) sl_source_close(s->compressed);
  if (source->name != NULL) sl_free(alloc, source->name, strlen(source->name) + 1);
  sl_free(alloc, s, sizeof *s);
}

/// The reader is done with the object (sl_source_drop of all of it; from
/// the thread that reads it): the inflated bytes it consumed and the chunks
/// kept for reuse go (a dataset's finished .csv.gz objects each held up to
/// 24 MiB of them until the dataset closed), and the hint passes to the
/// compressed source (a remote object lets go of its cached bytes).
static void inflate_drop(struct sl_source* source, int64_t offset, int64_t length) {
  struct inflate_source* s = (struct inflate_source*)source;
  if (offset > 0 || (length >= 0 && source->size >= 0 && length < source->size)) return;
  if (s->cur_used == s->cur.size) {
    chunk_release(&s->cur);
    s->cur_used = 0;
  }
  if (s->block.start == s->block.end) sl_source_block_free(&s->block);
  sl_block_pool_idle(s->pool);
  // Inflated to the end, and every chunk taken: the thread, the decoder and
  // the last compressed bytes (a remote object's last part) go too.
  pthread_mutex_lock(&s->lock);
  int finished = s->done && s->ready_count == 0 && s->failure.code == 0;
  pthread_mutex_unlock(&s->lock);
  if (finished) {
    stop_thread(s);
    sl_view_release(&s->in);
    s->in_used = 0;
    free_decoder(s);
  }
  sl_source_drop(s->compressed, 0, s->compressed->size);
}

/// The reader sampled the head to open and will read the object from its
/// start later (one of a dataset's objects, all opened before the scan):
/// the sample, the decoder and what the compressed source fetched ahead go
/// now, when it can start over. 150 remote .csv.gz objects of 2.9 MB held
/// 3.7 MB each until their turn (the sample's 1 MiB, the download it
/// started), 690 MB in all.
static void inflate_trim(struct sl_source* source) {
  struct inflate_source* s = (struct inflate_source*)source;
  if (s->consumed || s->running || !compressed_rewindable(s->compressed)) return;
  struct sluice_error error;  // kept for the reads, which then fail
  memset(&error, 0, sizeof error);
  if (back_to_start(s, &error) != 0) return;
  free_decoder(s);
  sl_block_pool_idle(s->pool);
}

/// A dataset's next object: its compressed source fetches ahead.
static void inflate_prefetch(struct sl_source* source) {
  sl_source_prefetch(((struct inflate_source*)source)->compressed);
}

static const struct sl_source_ops inflate_ops = {
    .read_at = NULL,
    .read_next = inflate_read_next,
    .read_some = inflate_read_some,
    .close = inflate_close,
    .peek = inflate_peek,
    .drop = inflate_drop,
    .trim = inflate_trim,
    .prefetch = inflate_prefetch,
};

/// Starts the decompressor at the first compressed byte (making its state
/// when there is none).
static int start(struct inflate_source* s, struct sluice_error* error) {
  const struct sluice_allocator* alloc = s->base.alloc;
  if (s->codec != NULL) {
    if (s->codec_state == NULL) s->codec_state = s->codec->create(alloc);
    if (s->codec_state == NULL || s->codec->reset(s->codec_state) != 0) {
      return sl_error_set(error, ENOMEM, "%s: out of memory", s->base.name);
    }
  } else if (s->zstd && s->zstd_ctx == NULL) {
    ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(alloc)};
    s->zstd_ctx = ZSTD_createDCtx_advanced(mem);
  } else if (!s->zstd && s->gzip == NULL) {
    s->gzip = sl_alloc(alloc, sizeof *s->gzip);
  }
  if (s->codec == NULL && (s->zstd ? s->zstd_ctx == NULL : s->gzip == NULL)) {
    return sl_error_set(error, ENOMEM, "%s: out of memory", s->base.name);
  }
  int rc;
  if (s->codec != NULL) {
    rc = 0;  // reset above
  } else if (s->zstd) {
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
  s->decoding = 1;
  return 0;
}

int sl_source_inflate_open(struct sl_source* compressed, enum sl_compression kind,
                           struct sl_source** out, struct sluice_error* error) {
  *out = NULL;
  const struct sluice_allocator* alloc = compressed->alloc;
  if (kind == SL_COMPRESS_NONE) {
    return sl_error_set(error, EINVAL, "%s: not gzip, zstd, bzip2 or xz data", compressed->name);
  }
  int zstd = kind == SL_COMPRESS_ZSTD;
  struct inflate_source* s = sl_calloc(alloc, 1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", compressed->name);
  if (pthread_mutex_init(&s->lock, NULL) != 0) {
    sl_free(alloc, s, sizeof *s);
    return sl_error_set(error, EAGAIN, "%s: cannot create a lock", compressed->name);
  }
  if (pthread_cond_init(&s->changed, NULL) != 0) {
    pthread_mutex_destroy(&s->lock);
    sl_free(alloc, s, sizeof *s);
    return sl_error_set(error, EAGAIN, "%s: cannot create a condition variable",
                        compressed->name);
  }
  s->base.ops = &inflate_ops;
  s->base.size = -1;
  s->base.alloc = alloc;
  s->base.name = sl_strdup(alloc, compressed->name != NULL ? compressed->name : "");
  s->compressed = compressed;
  s->zstd = zstd;
  s->codec = kind == SL_COMPRESS_BZIP2 ? &sl_inflate_bzip2
             : kind == SL_COMPRESS_XZ  ? &sl_inflate_xz
                                       : NULL;
  s->pool = sl_block_pool_create(alloc, (INFLATE_AHEAD + 2) * INFLATE_CHUNK);
  int rc = s->base.name == NULL || s->pool == NULL
               ? sl_error_set(error, ENOMEM, "%s: out of memory", compressed->name)
               : start(s, error);
  if (rc != 0) {
    inflate_close(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}

int sl_source_inflate_adopt(struct sl_source* compressed, enum sl_compression kind,
                            struct sl_source** out, struct sluice_error* error) {
  int rc = sl_source_inflate_open(compressed, kind, out, error);
  if (rc != 0) {
    sl_source_close(compressed);
    return rc;
  }
  ((struct inflate_source*)*out)->owns = 1;
  return 0;
}

int sl_source_inflate_untouched(const struct sl_source* source) {
  return source->ops == &inflate_ops && !((const struct inflate_source*)source)->consumed;
}

/// A mapped file is read by ranges from any offset; a remote object's
/// forward reads can start over (sl_source_seek).
static int compressed_rewindable(const struct sl_source* c) {
  return ranged(c) || c->ops->seek != NULL;
}

int sl_source_inflate_rewindable(const struct sl_source* inflated) {
  return inflated->ops == &inflate_ops &&
         compressed_rewindable(((const struct inflate_source*)inflated)->compressed);
}

/// Back to the object's first byte with nothing inflated or fetched ahead.
/// The decoder starts again on the next read.
static int back_to_start(struct inflate_source* s, struct sluice_error* error) {
  stop_thread(s);  // first: the thread reads the compressed source
  if (!ranged(s->compressed)) {
    int rc = sl_source_seek(s->compressed, 0, error);
    if (rc != 0) {  // the chunks made ahead are gone: reads fail from here
      s->done = 1;
      sl_error_set(&s->failure, rc, "%s: cannot read the compressed object again", s->base.name);
      return rc;
    }
  }
  s->seek_needed = 0;
  chunk_release(&s->cur);
  s->cur_used = 0;
  s->done = 0;
  s->consumed = 0;
  s->decoding = 0;
  memset(&s->failure, 0, sizeof s->failure);
  sl_view_release(&s->in);
  s->in_used = 0;
  sl_source_block_free(&s->block);  // views of it keep their bytes
  return 0;
}

int sl_source_inflate_rewind(struct sl_source* inflated, struct sluice_error* error) {
  if (!sl_source_inflate_rewindable(inflated)) {
    return sl_error_set(error, ENOTSUP, "%s: a compressed stream is read once", inflated->name);
  }
  return back_to_start((struct inflate_source*)inflated, error);
}

int sl_source_inflate_failure(struct sl_source* inflated, struct sluice_error* error) {
  if (inflated->ops != &inflate_ops) return 0;
  struct inflate_source* s = (struct inflate_source*)inflated;
  // Only a sample was inflated (a reader's open): the thread goes on from it.
  if (!s->running && !s->done && s->decoding) {
    if (pthread_create(&s->thread, NULL, inflate_main, s) != 0) return 0;
    s->running = 1;
  }
  pthread_mutex_lock(&s->lock);
  // As far as the thread inflates ahead: to the end, an error or a full queue.
  while (s->running && !s->done && s->ready_count < INFLATE_AHEAD) {
    pthread_cond_wait(&s->changed, &s->lock);
  }
  int rc = s->done ? s->failure.code : 0;
  if (rc != 0 && error != NULL) *error = s->failure;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

int sl_source_compression(struct sl_source* source, enum sl_compression* kind,
                          const char** unread, struct sluice_error* error) {
  struct sl_view head = {NULL, 0, NULL};
  SL_RETURN_NOT_OK(sl_source_peek(source, SL_COMPRESSION_MAGIC_BYTES, &head, error));
  *kind = sl_compression_of_bytes(head.data, head.size);
  *unread = sl_unread_compression_of_bytes(head.data, head.size);
  sl_view_release(&head);
  return 0;
}

/// Bytes of an object named compressed looked at when they are not: binary
/// ones show a damaged header within them.
#define NAMED_PLAIN_PEEK 64

/// An object named compressed (x.csv.gz) whose first bytes carry no magic
/// is read as the plain text it may well be (a body a server decoded in
/// transit, a misnamed file); but bytes that end within the named
/// compression's magic were cut short (read as text they gave 0 rows under
/// a bogus header, exit 0), and binary ones are a damaged header (they
/// gave a parse error about the compressed bytes).
static int check_named_plain(struct sl_source* source, const char* name, int text,
                             struct sluice_error* error) {
  enum sl_compression named = sl_compression_for_name(name);
  // (a body its server sent with a Content-Encoding was decoded on its way:
  // x.csv.gz stored so on S3 comes plain)
  if (named == SL_COMPRESS_NONE || source->ops == &inflate_ops || sl_http_source_coded(source)) {
    return 0;
  }
  struct sl_view head = {NULL, 0, NULL};
  SL_RETURN_NOT_OK(sl_source_peek(source, NAMED_PLAIN_PEEK, &head, error));
  const char* what = sl_compression_name(named);
  int rc = 0;
  if (sl_compression_magic_prefix(named, head.data, head.size)) {
    rc = sl_error_set(error, EIO, "%s: truncated %s data: the object ends after %" PRId64
                      " bytes, within the %s header", name, what, head.size, what);
  }
  int64_t binary = -1;
  for (int64_t i = 0; text && rc == 0 && binary < 0 && i < head.size; ++i) {
    uint8_t b = head.data[i];
    if (b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f' && b != '\v' && b != 0x1B) {
      binary = i;
    }
  }
  if (binary >= 0) {
    char hex[3 * 8 + 1] = "";
    for (int64_t i = 0; i < head.size && i < 8; ++i) {
      snprintf(hex + 3 * i, sizeof hex - (size_t)(3 * i), "%02x ", head.data[i]);
    }
    if (hex[0] != '\0') hex[strlen(hex) - 1] = '\0';
    size_t len = sl_location_name_length(name);
    size_t suffix = sl_compression_suffix_length(name);
    rc = sl_error_set(error, EINVAL, "%s: named %.*s but not %s data: its first bytes (%s) are "
                      "binary, not the %s magic (damaged?)", name, (int)suffix,
                      name + len - suffix, what, hex, what);
  }
  sl_view_release(&head);
  return rc;
}

int sl_source_inflate_if_compressed(struct sl_source** source, struct sl_source** inflated,
                                    const char* name, int text, struct sluice_error* error) {
  enum sl_compression kind;
  const char* unread;
  SL_RETURN_NOT_OK(sl_source_compression(*source, &kind, &unread, error));
  if (unread != NULL) {
    return sl_error_set(error, ENOTSUP, "%s: the input is %s-compressed, which sluice does not "
                        "read (it reads gzip, zstd, bzip2 and xz): decompress it first",
                        name, unread);
  }
  if (kind == SL_COMPRESS_NONE) return check_named_plain(*source, name, text, error);
  SL_RETURN_NOT_OK(sl_source_inflate_open(*source, kind, inflated, error));
  *source = *inflated;
  return 0;
}

int sl_source_inflate_failure_first(struct sl_source* inflated, int rc,
                                    struct sluice_error* error) {
  if (rc == 0 || rc == ENOMEM || inflated == NULL) return rc;
  struct sluice_error why;
  memset(&why, 0, sizeof why);
  int bad = sl_source_inflate_failure(inflated, &why);
  if (bad == 0) return rc;
  if (error != NULL) *error = why;
  return bad;
}
