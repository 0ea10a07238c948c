// The Avro container reader: header (magic, metadata, sync) at open, then
// splits by byte range, so opening reads the header only, however large or
// remote the file. A mapped file's split walks the block headers to its
// first block (chain_start); a remote object's finds it by its sync marker
// (as Hadoop and Spark split Avro), since a walk there is a request a block. After open the reader is read-only, so splits
// decode concurrently; each split owns its builders and decompression buffer.
#include "avro_reader.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "avro_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_buffer.h"
#include "core/sl_error.h"
#include "core/sl_options.h"
#include "core/sl_value_text.h"

#define AVRO_MAGIC "Obj\x01"
#define AVRO_SYNC_LEN 16
/// Without a batch size from the caller, a batch holds about this many bytes
/// at eight per top-level field, between the two row counts below; a split
/// (at most 8 MiB of file) usually ends it first. W1's rows (a long and four
/// doubles) loaded 7% faster in one batch per split than in batches of 64K
/// rows: each batch's columns are fresh memory, set up and mapped per column,
/// and a batch cut short of the split's end leaves a small one behind.
#define AVRO_BATCH_TARGET_BYTES ((int64_t)32 << 20)
#define AVRO_MIN_BATCH_ROWS ((int64_t)65536)
#define AVRO_MAX_BATCH_ROWS ((int64_t)1 << 20)
/// A batch also ends once its builders hold this much (W2 rows are 128 KiB).
#define AVRO_BATCH_BYTES ((int64_t)128 << 20)
/// Forward-only sources: blocks larger than this are read in chunks of it.
#define AVRO_FORWARD_CHUNK ((int64_t)16 << 20)
#define AVRO_MAX_META_ENTRY ((int64_t)64 << 20)

struct avro_block {
  int64_t header;  ///< offset of the block's object count
  int64_t data;    ///< offset of its (compressed) data
  int64_t size;    ///< bytes of data
  int64_t count;   ///< objects
};

struct avro_reader {
  struct sl_source* source;
  const struct sluice_allocator* alloc;
  int64_t batch_rows;
  /// The most bytes a block may take in memory (max_block_bytes=): its
  /// decompressed bytes, and a block copied from a pipe or remote object.
  int64_t max_block_bytes;
  int64_t split_size;  ///< -O split_size: bytes per split (0: chosen by the file size)
  char* json;  ///< the writer schema text
  size_t json_len;
  /// The header's other entries (not avro.*: what the writer added, such as
  /// pandas' index description), as Arrow metadata pairs for the schema.
  struct sl_buffer user_meta;
  int32_t n_user_meta;
  struct avro_schema schema;
  char* reader_json;  ///< the reader schema text (format option reader_schema=PATH), or NULL
  size_t reader_json_len;
  struct avro_schema reader_schema;
  struct avro_program prog;
  struct ArrowSchema arrow;
  enum avro_codec codec;
  uint8_t sync[AVRO_SYNC_LEN];
  int64_t pos;  ///< after the header
  int forward;
  int scanned;  ///< forward-only: the one split was opened
  /// A mapped file's plan: split k starts at byte pos + k * split_bytes,
  /// and chain_at[k] is the header of its first block (the first whose
  /// header is at or past that byte; -1 = not known yet), block number
  /// chain_no[k], as found by walking the blocks (chain_start). Splits
  /// publish what they find, so that the next one walks from there.
  int64_t split_bytes;
  int64_t n_chain;
  _Atomic int64_t* chain_at;
  _Atomic int64_t* chain_no;
};

/* ---- byte input over either kind of source ------------------------------------ */

/// Reads exactly `n` bytes at r->pos (or forward). *eof (if given) is set and
/// 0 returned when no byte at all is left.
static int input_read(struct avro_reader* r, int64_t* pos, int64_t n, struct sl_view* v, int* eof,
                      const char* what, struct sluice_error* error) {
  struct sl_source* src = r->source;
  v->data = NULL;
  v->size = 0;
  v->owner = NULL;
  if (eof) *eof = 0;
  if (!r->forward) {
    if (eof && *pos == src->size) {
      *eof = 1;
      return 0;
    }
    if (n > src->size - *pos)
      return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": truncated %s (%" PRId64
                          " bytes needed, %" PRId64 " left)", src->name, *pos, what, n,
                          src->size - *pos);
    SL_RETURN_NOT_OK(sl_source_read_at(src, *pos, n, v, error));
  } else {
    SL_RETURN_NOT_OK(sl_source_read_next(src, n, v, error));
    if (v->size == 0 && eof && n > 0) {
      sl_view_release(v);
      *eof = 1;
      return 0;
    }
  }
  if (v->size < n) {
    sl_view_release(v);
    return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": truncated %s", src->name, *pos, what);
  }
  *pos += n;
  return 0;
}

static int input_long(struct avro_reader* r, int64_t* pos, int64_t* out, int* eof,
                      const char* what, struct sluice_error* error) {
  uint64_t v = 0;
  int64_t start = *pos;
  for (int shift = 0; shift < 70; shift += 7) {
    struct sl_view b;
    SL_RETURN_NOT_OK(input_read(r, pos, 1, &b, shift == 0 ? eof : NULL, what, error));
    if (eof && *eof) return 0;
    uint8_t byte = b.data[0];
    sl_view_release(&b);
    v |= (uint64_t)(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
      return 0;
    }
  }
  return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": %s: varint longer than 10 bytes",
                      r->source->name, start, what);
}

/* ---- open -------------------------------------------------------------------- */

static void reader_close(void* reader) {
  struct avro_reader* r = reader;
  if (r == NULL) return;
  const struct sluice_allocator* alloc = r->alloc;
  if (r->json) sl_free(alloc, r->json, r->json_len + 1);
  sl_buffer_reset(&r->user_meta);
  sl_avro_program_release(&r->prog);
  sl_avro_schema_release(&r->schema);
  sl_avro_schema_release(&r->reader_schema);
  if (r->reader_json) sl_free(alloc, r->reader_json, r->reader_json_len + 1);
  if (r->arrow.release) r->arrow.release(&r->arrow);
  sl_free(alloc, r->chain_at, (size_t)r->n_chain * sizeof *r->chain_at);
  sl_free(alloc, r->chain_no, (size_t)r->n_chain * sizeof *r->chain_no);
  sl_free(alloc, r, sizeof *r);
}

static int read_header(struct avro_reader* r, struct sluice_error* error) {
  const char* name = r->source->name;
  struct sl_view v;
  int64_t pos = 0;
  SL_RETURN_NOT_OK(input_read(r, &pos, 4, &v, NULL, "header", error));
  int magic_ok = memcmp(v.data, AVRO_MAGIC, 4) == 0;
  sl_view_release(&v);
  if (!magic_ok)
    return sl_error_set(error, EILSEQ, "%s: byte 0: not an Avro object container file (bad magic)", name);
  r->codec = AVRO_CODEC_NULL;
  for (;;) {
    int64_t count, bytes;
    SL_RETURN_NOT_OK(input_long(r, &pos, &count, NULL, "header metadata", error));
    if (count == 0) break;
    if (count < 0) {
      if (count == INT64_MIN) return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": bad metadata count", name, pos);
      count = -count;
      SL_RETURN_NOT_OK(input_long(r, &pos, &bytes, NULL, "header metadata", error));
    }
    // Each entry takes at least 2 bytes (two length varints): a count the
    // bytes left cannot hold is refused up front. A stream's size is unknown,
    // but there a forged count only runs into the end of the data.
    if (!r->forward && count > (r->source->size - pos) / 2)
      return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": %" PRId64 " metadata entries "
                          "cannot fit in the %" PRId64 " bytes left", name, pos, count,
                          r->source->size - pos);
    for (int64_t i = 0; i < count; ++i) {
      int64_t klen, vlen;
      char key[64];
      SL_RETURN_NOT_OK(input_long(r, &pos, &klen, NULL, "metadata key", error));
      if (klen < 0 || klen > AVRO_MAX_META_ENTRY)
        return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": bad metadata key length %" PRId64,
                            name, pos, klen);
      SL_RETURN_NOT_OK(input_read(r, &pos, klen, &v, NULL, "metadata key", error));
      size_t kn = (size_t)klen < sizeof key - 1 ? (size_t)klen : sizeof key - 1;
      memcpy(key, v.data, kn);
      key[kn] = '\0';
      int is_long_key = klen >= (int64_t)sizeof key - 1;
      int user = klen < 5 || memcmp(v.data, "avro.", 5) != 0;
      int32_t klen32 = (int32_t)klen;  // <= AVRO_MAX_META_ENTRY
      int rc_user = 0;
      if (user) {
        rc_user = sl_buffer_append(&r->user_meta, &klen32, 4);
        if (rc_user == 0) rc_user = sl_buffer_append(&r->user_meta, v.data, klen);
      }
      sl_view_release(&v);
      if (rc_user != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
      SL_RETURN_NOT_OK(input_long(r, &pos, &vlen, NULL, "metadata value", error));
      if (vlen < 0 || vlen > AVRO_MAX_META_ENTRY)
        return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": bad metadata value length %" PRId64,
                            name, pos, vlen);
      int64_t at = pos;
      SL_RETURN_NOT_OK(input_read(r, &pos, vlen, &v, NULL, "metadata value", error));
      int rc = 0;
      if (!is_long_key && strcmp(key, "avro.schema") == 0) {
        if (r->json) {
          rc = sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": avro.schema given twice", name, at);
        } else if ((r->json = sl_strndup(r->alloc, (const char*)v.data, (size_t)vlen)) == NULL) {
          rc = sl_error_set(error, ENOMEM, "%s: out of memory", name);
        } else {
          r->json_len = (size_t)vlen;
        }
      } else if (!is_long_key && strcmp(key, "avro.codec") == 0) {
        rc = sl_avro_codec_from_name((const char*)v.data, (size_t)vlen, &r->codec, error);
        if (rc != 0) sl_error_prefix(error, "%s: byte %" PRId64, name, at);
      } else if (user) {
        int32_t vlen32 = (int32_t)vlen;
        if (sl_buffer_append(&r->user_meta, &vlen32, 4) != 0 ||
            sl_buffer_append(&r->user_meta, v.data, vlen) != 0) {
          rc = sl_error_set(error, ENOMEM, "%s: out of memory", name);
        } else if (r->user_meta.size > INT32_MAX / 2) {  // Arrow metadata has int32 sizes
          rc = sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": the header's metadata passes "
                            "1 GiB", name, at);
        }
        r->n_user_meta++;
      }
      sl_view_release(&v);
      SL_RETURN_NOT_OK(rc);
    }
  }
  SL_RETURN_NOT_OK(input_read(r, &pos, AVRO_SYNC_LEN, &v, NULL, "sync marker", error));
  memcpy(r->sync, v.data, AVRO_SYNC_LEN);
  sl_view_release(&v);
  r->pos = pos;
  if (r->json == NULL)
    return sl_error_set(error, EILSEQ, "%s: the header has no avro.schema", name);
  return 0;
}

/// Checks a block header just read (b->data set): counts and sizes that the
/// file cannot hold are errors.
static int check_block_header(struct avro_reader* r, const char* label,
                              const struct avro_block* b, struct sluice_error* error) {
  // (bytes after the last block read as a header too: say which one is bad)
  if (b->count < 0 || b->size < 0)
    return sl_error_set(error, EILSEQ, "%s: %s at byte %" PRId64 ": negative %s (%" PRId64
                        "): not a block header (bytes after the last block, or a damaged one)",
                        r->source->name, label, b->header,
                        b->count < 0 ? "object count" : "byte size",
                        b->count < 0 ? b->count : b->size);
  int64_t left = r->source->size - b->data;
  if (!r->forward && b->size > left)
    return sl_error_set(error, EILSEQ, "%s: %s at byte %" PRId64 ": truncated "
                        "block (%" PRId64 " bytes declared, %" PRId64 " left)", r->source->name,
                        label, b->header, b->size, left);
  if (!r->forward && b->size > left - AVRO_SYNC_LEN)
    return sl_error_set(error, EILSEQ, "%s: %s at byte %" PRId64 ": the file ends inside "
                        "the block's sync marker (%" PRId64 " of its %d bytes)", r->source->name,
                        label, b->header, left - b->size, AVRO_SYNC_LEN);
  return 0;
}

/// Reads one block header at *pos: *eof at a clean end of data.
static int read_block_header(struct avro_reader* r, int64_t* pos, const char* label,
                             struct avro_block* b, int* eof, struct sluice_error* error) {
  b->header = *pos;
  SL_RETURN_NOT_OK(input_long(r, pos, &b->count, eof, "block header", error));
  if (*eof) return 0;
  SL_RETURN_NOT_OK(input_long(r, pos, &b->size, NULL, "block header", error));
  b->data = *pos;
  return check_block_header(r, label, b, error);
}

/// The block header at file offset `at` from its bytes p[0..n) (ranged
/// reads, where the bytes are in memory): count and size, checked.
static int parse_block_header(struct avro_reader* r, const uint8_t* p, int64_t n, int64_t at,
                              const char* label, struct avro_block* b,
                              struct sluice_error* error) {
  const uint8_t* q = p;
  if (avro_zigzag(&q, p + n, &b->count) != 0 || avro_zigzag(&q, p + n, &b->size) != 0)
    return sl_error_set(error, EILSEQ, "%s: %s at byte %" PRId64 ": truncated or overlong "
                        "block header", r->source->name, label, at);
  b->header = at;
  b->data = at + (q - p);
  return check_block_header(r, label, b, error);
}

static int bad_sync(struct avro_reader* r, const char* label, int64_t at,
                    struct sluice_error* error) {
  return sl_error_set(error, EILSEQ, "%s: bad sync marker after %s at byte %" PRId64,
                      r->source->name, label, at);
}

/// A split's bytes: a view of [off, off + len) inside `range` (which holds
/// the file's bytes from `range_off`) when it covers them, else read.
static int range_bytes(struct avro_reader* r, const struct sl_view* range, int64_t range_off,
                       int64_t off, int64_t len, struct sl_view* v, struct sluice_error* error) {
  if (range->data != NULL && off >= range_off && off - range_off <= (int64_t)range->size &&
      len <= (int64_t)range->size - (off - range_off)) {
    v->data = range->data + (off - range_off);
    v->size = len;
    v->owner = NULL;  // borrowed from the range, which outlives it
    return 0;
  }
  return sl_source_read_at(r->source, off, len, v, error);
}

/// The first position p in [from, limit) where the sync marker starts
/// (*at = -1 if none), from `range` where it covers them, else read in
/// chunks so a remote source fetches ranges.
static int find_sync(struct avro_reader* r, const struct sl_view* range, int64_t range_off,
                     int64_t from, int64_t limit, int64_t* at, struct sluice_error* error) {
  enum { CHUNK = 1 << 20 };
  *at = -1;
  if (limit > r->source->size - AVRO_SYNC_LEN + 1) limit = r->source->size - AVRO_SYNC_LEN + 1;
  while (from < limit) {
    int64_t starts = limit - from < CHUNK ? limit - from : CHUNK;
    struct sl_view v;
    SL_RETURN_NOT_OK(range_bytes(r, range, range_off, from, starts + AVRO_SYNC_LEN - 1, &v, error));
    int64_t n = (int64_t)v.size - AVRO_SYNC_LEN + 1;  // positions a whole marker fits at
    for (int64_t i = 0; i < n && i < starts; ++i) {
      const uint8_t* hit = memchr(v.data + i, r->sync[0], (size_t)(n - i));
      if (hit == NULL) break;
      i = hit - v.data;
      if (memcmp(hit, r->sync, AVRO_SYNC_LEN) == 0 && i < starts) {
        *at = from + i;
        break;
      }
    }
    sl_view_release(&v);
    if (*at >= 0 || n < starts) return 0;
    from += starts;
  }
  return 0;
}

/// Checks the block whose header is at `h` as load_block would: a sane
/// header, and data that ends in the sync marker (nothing at the file's end
/// is fine); *next (if not NULL): where the block after it starts. The
/// error names the block (`label`) and the offset.
static int check_block_at(struct avro_reader* r, const struct sl_view* range, int64_t range_off,
                          int64_t h, const char* label, int64_t* next,
                          struct sluice_error* error) {
  if (next != NULL) *next = h;
  if (h == r->source->size) return 0;
  struct avro_block b;
  struct sl_view v;
  int64_t hn = r->source->size - h < 20 ? r->source->size - h : 20;
  SL_RETURN_NOT_OK(range_bytes(r, range, range_off, h, hn, &v, error));
  int rc = parse_block_header(r, v.data, hn, h, label, &b, error);
  sl_view_release(&v);
  SL_RETURN_NOT_OK(rc);
  // parse_block_header checked that the data and a marker fit in the file.
  SL_RETURN_NOT_OK(range_bytes(r, range, range_off, b.data + b.size, AVRO_SYNC_LEN, &v, error));
  int ok = memcmp(v.data, r->sync, AVRO_SYNC_LEN) == 0;
  sl_view_release(&v);
  if (next != NULL) *next = b.data + b.size + AVRO_SYNC_LEN;
  return ok ? 0 : bad_sync(r, label, b.data + b.size, error);
}

/// Whether the sync marker at `at` is a real block boundary: it ends the
/// file, or a sane block header follows whose data ends in the marker again.
/// Data may contain the marker's 16 bytes (a file copied into a bytes
/// field, say); a split must not start there. Read errors count as "no".
static int block_follows(struct avro_reader* r, const struct sl_view* range, int64_t range_off,
                         int64_t at) {
  struct sluice_error scratch;
  memset(&scratch, 0, sizeof scratch);
  return check_block_at(r, range, range_off, at + AVRO_SYNC_LEN, "block", NULL, &scratch) == 0;
}

/// The first sync marker in [from, limit) that is a real block boundary
/// (block_follows); *at = -1 if none.
static int find_block_start(struct avro_reader* r, const struct sl_view* range,
                            int64_t range_off, int64_t from, int64_t limit, int64_t* at,
                            struct sluice_error* error) {
  for (;;) {
    SL_RETURN_NOT_OK(find_sync(r, range, range_off, from, limit, at, error));
    if (*at < 0 || block_follows(r, range, range_off, *at)) return 0;
    from = *at + 1;
  }
}

/// How far past a split's first marker its blocks must hold up
/// (marker_believed) for the split to start there.
#define AVRO_CHAIN_CHECK ((int64_t)1 << 20)

/// Whether the sync marker at `at`, which a block follows, is believed to
/// be a real boundary: the blocks from there on pass check_block_at for
/// AVRO_CHAIN_CHECK bytes (or to the file's end), and without a codec the
/// first two hold their objects exactly. A copy of the marker in data (an
/// Avro file stored in a bytes field, say) is followed by what happens to be
/// there: a row of a long and bytes reads as a block header, but its objects
/// do not fit. Read errors count as "no".
static int marker_believed(struct avro_reader* r, const struct sl_view* range, int64_t range_off,
                           int64_t at) {
  struct sluice_error scratch;
  memset(&scratch, 0, sizeof scratch);
  int64_t h = at + AVRO_SYNC_LEN, bound = h + AVRO_CHAIN_CHECK;
  for (int k = 0; h < bound && h < r->source->size; ++k) {
    struct avro_block b;
    int64_t next;
    if (check_block_at(r, range, range_off, h, "block", &next, &scratch) != 0) return 0;
    if (k < 2 && r->codec == AVRO_CODEC_NULL) {
      struct sl_view v, hv;
      int64_t hn = r->source->size - h < 20 ? r->source->size - h : 20;
      if (range_bytes(r, range, range_off, h, hn, &hv, &scratch) != 0) return 0;
      int rc = parse_block_header(r, hv.data, hn, h, "block", &b, &scratch);
      sl_view_release(&hv);
      if (rc != 0 || range_bytes(r, range, range_off, b.data, b.size, &v, &scratch) != 0) return 0;
      int fill = sl_avro_objects_fill(&r->prog, v.data, v.data + v.size, b.count);
      sl_view_release(&v);
      if (!fill) return 0;
    }
    h = next;
  }
  return 1;
}

/// A mapped file's walk: makes `win` (the file's bytes from *win_off) hold
/// [off, off + len), viewing the file again from `off` when it does not.
/// The window stays under the size at which a view's release drops its
/// pages (SL_RANGE_REF_MIN in sl_source_file.c), which splits decoding
/// them still use. Read errors: nonzero, the caller walks the slow way.
#define AVRO_WALK_WINDOW ((int64_t)128 << 10)
static int walk_window(struct avro_reader* r, struct sl_view* win, int64_t* win_off, int64_t off,
                       int64_t len) {
  if (win->data != NULL && off >= *win_off && off + len <= *win_off + (int64_t)win->size) return 0;
  sl_view_release(win);
  win->data = NULL;
  win->size = 0;
  int64_t n = r->source->size - off < AVRO_WALK_WINDOW ? r->source->size - off : AVRO_WALK_WINDOW;
  struct sluice_error scratch;
  memset(&scratch, 0, sizeof scratch);
  if (n < len || sl_source_read_at(r->source, off, n, win, &scratch) != 0) {
    win->data = NULL;
    win->size = 0;
    win->owner = NULL;
    return EIO;
  }
  *win_off = off;
  return 0;
}

/// The first block that starts at or after `begin`, found by walking the
/// blocks from block *number at *at, a real block's header (every marker
/// checked, the errors naming the block): *at (r->source->size if none)
/// and its number.
static int walk_blocks(struct avro_reader* r, int64_t begin, int64_t* at, int64_t* number,
                       struct sluice_error* error) {
  const struct sl_view none = {0};
  char label[48];
  int64_t size = r->source->size;
  if (r->source->mapped) {
    // Headers and markers read in place through a window of the mapping,
    // not with two views (two counts on the mapping's shared reference,
    // which every split's thread touches) and a label per block. A block
    // that fails is walked again below, for its error.
    struct sl_view win = {0};
    int64_t win_off = 0;
    struct sluice_error scratch;
    memset(&scratch, 0, sizeof scratch);
    while (*at < begin && *at < size) {
      struct avro_block b;
      int64_t hn = size - *at < 20 ? size - *at : 20;
      if (walk_window(r, &win, &win_off, *at, hn) != 0 ||
          parse_block_header(r, win.data + (*at - win_off), hn, *at, "block", &b, &scratch) != 0)
        break;
      // (parse_block_header made sure that the marker fits in the file)
      int64_t m = b.data + b.size;
      if (walk_window(r, &win, &win_off, m, AVRO_SYNC_LEN) != 0 ||
          memcmp(win.data + (m - win_off), r->sync, AVRO_SYNC_LEN) != 0)
        break;
      *at = m + AVRO_SYNC_LEN;
      ++*number;
    }
    sl_view_release(&win);
  }
  for (; *at < begin && *at < size; ++*number) {
    snprintf(label, sizeof label, "block %" PRId64, *number);
    SL_RETURN_NOT_OK(check_block_at(r, &none, 0, *at, label, at, error));
  }
  return 0;
}

/// walk_blocks from the file's first block.
static int walk_to_block(struct avro_reader* r, int64_t begin, int64_t* at, int64_t* number,
                         struct sluice_error* error) {
  *at = r->pos;
  *number = 0;
  return walk_blocks(r, begin, at, number, error);
}

/// The planned split (chain_at's index) that starts at byte `offset`, or -1.
static int64_t chain_index(const struct avro_reader* r, int64_t offset) {
  if (r->chain_at == NULL || offset < r->pos || (offset - r->pos) % r->split_bytes != 0) return -1;
  int64_t k = (offset - r->pos) / r->split_bytes;
  return k < r->n_chain ? k : -1;
}

/// Split k's first block is at `at`, block number `number` (walked: exact).
static void chain_publish(struct avro_reader* r, int64_t k, int64_t at, int64_t number) {
  if (k < 0 || k >= r->n_chain) return;
  atomic_store(&r->chain_no[k], number);  // before chain_at, which readers test first
  atomic_store(&r->chain_at[k], at);
}

/// A mapped file's split (or a remote one whose first marker is not
/// believed): the first block at or after `begin` (a split's first
/// byte) and its number, walked from the nearest planned split before it
/// whose first block is known (the file's first block at worst), so that
/// each split mostly walks the headers of the one before it. Walking is
/// exact where a search for the marker is not: the marker's 16 bytes inside
/// data (an Avro file written with the same marker, stored in a bytes
/// field) may be followed by megabytes of what are blocks in every way.
/// Headers and markers alone are read (from memory already mapped; remote,
/// a request a block, each block walked once whatever the splits).
static int chain_start(struct avro_reader* r, int64_t begin, int64_t* at, int64_t* number,
                       struct sluice_error* error) {
  int64_t k = chain_index(r, begin);
  if (k < 0) return walk_to_block(r, begin, at, number, error);
  int64_t j = k;
  while (j > 0 && atomic_load(&r->chain_at[j]) < 0) --j;
  *at = j > 0 ? atomic_load(&r->chain_at[j]) : r->pos;
  *number = j > 0 ? atomic_load(&r->chain_no[j]) : 0;
  for (++j; j <= k; ++j) {  // each split on the way learns its first block too
    SL_RETURN_NOT_OK(walk_blocks(r, r->pos + j * r->split_bytes, at, number, error));
    chain_publish(r, j, *at, *number);
  }
  return 0;
}

/// The format options: reader_schema=PATH (a .avsc file, read and parsed
/// here), max_block_bytes=SIZE and split_size=SIZE; others are errors.
static int parse_options(struct avro_reader* r, const char* options, struct sluice_error* error) {
  const char* cursor = options;
  struct sl_option o;
  int k;
  while (cursor != NULL && (k = sl_option_next(&cursor, &o)) != 0) {
    if (k > 0 && sl_option_is(&o, "max_block_bytes")) {
      if (sl_parse_size(o.value, o.value_len, 1, (int64_t)AVRO_MAX_BLOCK, &r->max_block_bytes) != 0)
        return sl_error_set(error, EINVAL, "%s: Avro option max_block_bytes='%.*s': expected a "
                            "size from 1 byte to 16g (k, m, g suffixes)", r->source->name,
                            (int)o.value_len, o.value);
      continue;
    }
    if (k > 0 && sl_option_is(&o, "split_size")) {
      if (sl_parse_size(o.value, o.value_len, 1, INT64_MAX, &r->split_size) != 0)
        return sl_error_set(error, EINVAL, "%s: Avro option split_size='%.*s': expected a "
                            "size of 1 byte or more (k, m, g suffixes)", r->source->name,
                            (int)o.value_len, o.value);
      continue;
    }
    if (k < 0 || !sl_option_is(&o, "reader_schema") || o.value_len == 0 || r->reader_json != NULL)
      return sl_error_set(error, EINVAL, "%s: %s format option '%.*s' (known: reader_schema=PATH, "
                          "given once; max_block_bytes=SIZE; split_size=SIZE)", r->source->name,
                          k > 0 && sl_option_is(&o, "reader_schema") ? "bad" : "unknown",
                          (int)o.key_len, o.key);
    {
      char* path = sl_strndup(r->alloc, o.value, o.value_len);
      if (path == NULL) return sl_error_set(error, ENOMEM, "out of memory");
      struct sl_source* src;
      struct sl_view v = {0};
      int rc = sl_source_open(path, r->alloc, &src, error);
      if (rc == 0) {
        // (read again for each object of a dataset: a pipe would be read once)
        rc = src->size < 0 ? sl_error_set(error, EINVAL, "reader schema %s: not a regular "
                                          "file (it is read for each Avro object: save it "
                                          "to a file)", path)
                           : sl_source_read_at(src, 0, src->size, &v, error);
        if (rc == 0) {
          r->reader_json = sl_strndup(r->alloc, (const char*)v.data, (size_t)v.size);
          r->reader_json_len = (size_t)v.size;
          if (r->reader_json == NULL) rc = sl_error_set(error, ENOMEM, "out of memory");
        }
        sl_view_release(&v);
        sl_source_close(src);
      }
      if (rc == 0) {
        rc = sl_avro_schema_parse(r->reader_json, r->reader_json_len, r->alloc, &r->reader_schema, error);
        if (rc != 0) sl_error_prefix(error, "reader schema %s", path);
        // A reader schema's types are the plain mapping: resolution's
        // promotions write the widths Avro names.
        for (int64_t i = 0; rc == 0 && i < r->reader_schema.n_nodes; ++i)
          r->reader_schema.nodes[i]->arrow_type[0] = '\0';
      }
      sl_free(r->alloc, path, strlen(path) + 1);
      SL_RETURN_NOT_OK(rc);
    }
  }
  return 0;
}

static int64_t default_batch_rows(const struct avro_program* prog) {
  int64_t fields = prog->ops[0].n_kids > 0 ? prog->ops[0].n_kids : 1;
  int64_t rows = AVRO_BATCH_TARGET_BYTES / (8 * fields);
  return rows < AVRO_MIN_BATCH_ROWS   ? AVRO_MIN_BATCH_ROWS
         : rows > AVRO_MAX_BATCH_ROWS ? AVRO_MAX_BATCH_ROWS
                                      : rows;
}

static int reader_open(const struct sl_reader_args* args, void** reader, struct sluice_error* error) {
  *reader = NULL;
  struct sl_source* src = args->source;
  struct avro_reader* r = sl_calloc(args->alloc, 1, sizeof *r);
  if (r == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", src->name);
  r->source = src;
  r->alloc = args->alloc;
  sl_buffer_init(&r->user_meta, r->alloc);
  r->forward = src->ops->read_at == NULL || src->size < 0;
  int rc = read_header(r, error);
  if (rc == 0) {
    rc = sl_avro_schema_parse(r->json, r->json_len, r->alloc, &r->schema, error);
    if (rc != 0) sl_error_prefix(error, "%s: avro.schema", src->name);
  }
  if (rc == 0) rc = parse_options(r, args->format_options, error);
  if (rc == 0 && r->max_block_bytes == 0) {
    int64_t budget = args->memory_budget < (int64_t)AVRO_MAX_BLOCK ? args->memory_budget
                                                                    : (int64_t)AVRO_MAX_BLOCK;
    r->max_block_bytes = budget > AVRO_MIN_BLOCK_LIMIT ? budget : AVRO_MIN_BLOCK_LIMIT;
  }
  if (rc == 0 && r->reader_json != NULL) {
    // Batches take the reader's shape, and its schema is what a writer keeps.
    rc = sl_avro_program_build_resolved(&r->schema, &r->reader_schema, &r->prog, error);
    if (rc == 0) rc = sl_avro_arrow_schema(&r->reader_schema, r->reader_json, r->reader_json_len,
                                        &r->user_meta, r->n_user_meta, &r->arrow, error);
  } else {
    if (rc == 0) rc = sl_avro_program_build(&r->schema, &r->prog, error);
    if (rc == 0) rc = sl_avro_arrow_schema(&r->schema, r->json, r->json_len, &r->user_meta,
                                        r->n_user_meta, &r->arrow, error);
  }
  if (rc != 0 && strncmp(error->message, src->name, strlen(src->name)) != 0)
    sl_error_prefix(error, "%s", src->name);
  if (rc != 0) {
    reader_close(r);
    return rc;
  }
  r->batch_rows = args->batch_size > 0 ? args->batch_size : default_batch_rows(&r->prog);
  *reader = r;
  return 0;
}

static int reader_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct avro_reader* r = reader;
  return sl_schema_copy(&r->arrow, r->alloc, out, error);
}

/// A sync marker of few distinct bytes (all zeros, say, which sluice's
/// writer takes as sync=) may well occur in data followed by what looks like
/// a block (34 zero bytes are a marker, an empty block and the marker), so
/// no split could be sure where it starts. Random markers (fastavro, Java,
/// avro-c, sluice) have about 15 distinct bytes of 16.
static int sync_is_degenerate(const uint8_t* sync) {
  int seen[256] = {0}, distinct = 0;
  for (int i = 0; i < AVRO_SYNC_LEN; ++i) distinct += seen[sync[i]]++ == 0;
  return distinct < 4;
}

static int reader_plan(void* reader, struct sl_split** splits, int64_t* n,
                       struct sluice_error* error) {
  struct avro_reader* r = reader;
  *splits = NULL;
  *n = 0;
  if (r->forward) {
    struct sl_split* s = sl_calloc(r->alloc, 1, sizeof *s);
    if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
    *s = (struct sl_split){.index = 0, .offset = r->pos, .length = -1, .est_bytes = 0, .est_rows = -1};
    *splits = s;
    *n = 1;
    return 0;
  }
  int64_t total = r->source->size - r->pos;
  if (total <= 0) return 0;
  // Enough splits to keep every core busy on mid-sized files, few enough that
  // per-split set-up (one sync search) stays negligible.
  int64_t target = total / 32;
  if (target < ((int64_t)1 << 20)) target = (int64_t)1 << 20;
  if (target > ((int64_t)8 << 20)) target = (int64_t)8 << 20;
  // A remote split is one ranged GET of its bytes and AVRO_RANGE_TAIL more:
  // 1 MiB splits fetched every byte twice (a 17 MB object: 17 requests,
  // 34 MB).
  if (!r->source->mapped) target = (int64_t)8 << 20;
  if (r->split_size > 0) target = r->split_size;  // -O split_size
  // Such a marker cannot be trusted to start a split: one split reads the
  // file in one pass, as from a pipe (and the same with any thread count).
  if (sync_is_degenerate(r->sync)) target = total;
  int64_t count = (total + target - 1) / target;
  struct sl_split* s = sl_calloc(r->alloc, (size_t)count, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  {  // (a remote split walks from the nearest split start known too, when it must walk)
    sl_free(r->alloc, r->chain_at, (size_t)r->n_chain * sizeof *r->chain_at);
    sl_free(r->alloc, r->chain_no, (size_t)r->n_chain * sizeof *r->chain_no);
    r->n_chain = 0;
    r->chain_at = sl_alloc(r->alloc, (size_t)count * sizeof *r->chain_at);
    r->chain_no = sl_alloc(r->alloc, (size_t)count * sizeof *r->chain_no);
    if (r->chain_at == NULL || r->chain_no == NULL) {
      sl_free(r->alloc, r->chain_at, (size_t)count * sizeof *r->chain_at);
      sl_free(r->alloc, r->chain_no, (size_t)count * sizeof *r->chain_no);
      r->chain_at = NULL;
      r->chain_no = NULL;
      sl_free(r->alloc, s, (size_t)count * sizeof *s);
      return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
    }
    r->n_chain = count;
    r->split_bytes = target;
    for (int64_t k = 0; k < count; ++k) {
      atomic_init(&r->chain_at[k], k == 0 ? r->pos : -1);
      atomic_init(&r->chain_no[k], 0);
    }
  }
  int64_t ratio = r->codec == AVRO_CODEC_NULL ? 1 : 3;
  for (int64_t k = 0; k < count; ++k) {
    int64_t off = r->pos + k * target;
    int64_t len = k == count - 1 ? r->source->size - off : target;
    int64_t est = len * ratio < AVRO_BATCH_BYTES ? len * ratio : AVRO_BATCH_BYTES;
    s[k] = (struct sl_split){.index = k, .offset = off, .length = len, .est_bytes = est,
                             .est_rows = -1};
  }
  *splits = s;
  *n = count;
  return 0;
}

/// The block headers of a mapped file, walked from the first block (every
/// sync marker checked): each block's count goes to the split its header is
/// in. Remote objects would have to be read whole for it: left unknown.
static int reader_count_split_rows(void* reader, struct sl_split* splits, int64_t n,
                                   struct sluice_error* error) {
  struct avro_reader* r = reader;
  if (r->forward || !r->source->mapped || n == 0 || r->source->size <= r->pos) return 0;
  // A mapped file: a view of all its blocks costs nothing.
  struct sl_view all;
  SL_RETURN_NOT_OK(sl_source_read_at(r->source, r->pos, r->source->size - r->pos, &all, error));
  for (int64_t i = 0; i < n; ++i) splits[i].est_rows = 0;
  int rc = 0;
  int64_t k = 0;
  char label[48];
  for (int64_t i = 0, pos = r->pos; rc == 0 && pos < r->source->size; ++i) {
    struct avro_block b;
    snprintf(label, sizeof label, "block %" PRId64, i);
    int64_t left = r->source->size - pos;
    rc = parse_block_header(r, all.data + (pos - r->pos), left < 20 ? left : 20, pos, label, &b,
                            error);
    if (rc != 0) break;
    // parse_block_header made sure that the data and the sync fit in the file.
    pos = b.data + b.size + AVRO_SYNC_LEN;
    if (memcmp(all.data + (b.data + b.size - r->pos), r->sync, AVRO_SYNC_LEN) != 0) {
      rc = bad_sync(r, label, b.data + b.size, error);
      break;
    }
    while (k + 1 < n && b.header >= splits[k + 1].offset) {
      ++k;
      chain_publish(r, chain_index(r, splits[k].offset), b.header, i);  // spares the walks
    }
    splits[k].est_rows = b.count > INT64_MAX - splits[k].est_rows ? INT64_MAX
                                                                   : splits[k].est_rows + b.count;
  }
  sl_view_release(&all);
  if (rc != 0)
    for (int64_t j = 0; j < n; ++j) splits[j].est_rows = -1;
  return rc;
}

/* ---- splits ------------------------------------------------------------------ */

struct avro_split {
  struct avro_reader* r;
  int64_t pos;  ///< ranged: the next block's start (-1 until the first is found)
  int64_t end;  ///< ranged: the split decodes the blocks that start before this
  int64_t begin;  ///< ranged: the split's first byte
  struct sl_view range;  ///< ranged: the split's bytes, fetched once (see fetch_range)
  int64_t range_off;     ///< the file offset of range.data[0]
  int numbered;   ///< block numbers are known (the split starts at the first block)
  int64_t chain;  ///< a mapped file: the planned split's index (chain_index), else -1
  int64_t fpos;                   ///< forward: stream position
  struct sl_builder root;
  struct sl_builder** bld;
  struct avro_decoder dec;
  struct sl_view view;  ///< the current block's bytes
  struct avro_buf buf;  ///< its decompressed bytes
  struct avro_buf raw;  ///< forward-only: a large block's bytes, gathered in chunks
  const uint8_t* base;  ///< the block's (compressed) bytes, for error offsets
  struct avro_block block;
  int64_t blocks_seen;  ///< blocks read so far
  char label[48];       ///< "block N" (or "block" where N is unknown), for errors
  int64_t rows_left;    ///< objects left in the current block
  int loaded, finished;
  int flat;  ///< rows are narrow records of numbers (sl_avro_decode_flat_rows)
  int64_t drop_from;    ///< mapped input: start of the decoded bytes not yet dropped (-1 = none)
  int64_t drop_end;     ///< mapped input: end of the last block loaded
  /// A placed scan (sl_split_place): per output column, where this split's
  /// values go (NULL = not placed), and the rows delivered so far.
  uint8_t** place_at;
  int64_t n_place_at;  ///< its entries (the root's columns when it was made)
  const struct sl_split_place* place;
  int64_t rows_out;
};

/// Mapped input: the blocks decoded so far are not read again, so their pages
/// leave the resident set (as the Parquet reader does per column chunk),
/// once per AVRO_DROP_BYTES or at the end of the split (`all`), not per
/// block: a madvise per 64 KiB block would cost more than it saves.
#define AVRO_DROP_BYTES ((int64_t)8 << 20)
static void drop_decoded(struct avro_split* s, int all) {
  if (s->r->forward || s->drop_from < 0) return;
  int64_t end = s->drop_end;
  if (end - s->drop_from >= AVRO_DROP_BYTES || (all && end > s->drop_from)) {
    sl_source_drop(s->r->source, s->drop_from, end - s->drop_from);
    s->drop_from = end;
  }
}

static void split_close(void* state) {
  struct avro_split* s = state;
  if (s == NULL) return;
  const struct sluice_allocator* alloc = s->r->alloc;
  drop_decoded(s, 1);
  sl_view_release(&s->view);
  sl_view_release(&s->range);
  sl_avro_buf_release(&s->buf, alloc);
  sl_avro_buf_release(&s->raw, alloc);
  sl_builder_release(&s->root);  // (which sets root.n_children to 0)
  if (s->bld) sl_free(alloc, s->bld, (size_t)s->r->prog.n_ops * sizeof *s->bld);
  if (s->place_at) sl_free(alloc, s->place_at, (size_t)s->n_place_at * sizeof *s->place_at);
  sl_free(alloc, s, sizeof *s);
}

/// A placed scan: the output columns whose values may go to the caller's
/// memory (a fixed-width column of the width it expects). ENOMEM.
static int set_place(struct avro_split* s, const struct sl_split_place* p,
                     const int64_t* columns) {
  int64_t n = s->root.n_children;
  s->place_at = sl_calloc(s->r->alloc, (size_t)(n > 0 ? n : 1), sizeof *s->place_at);
  if (s->place_at == NULL) return ENOMEM;
  s->n_place_at = n > 0 ? n : 1;
  s->place = p;
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = columns != NULL ? columns[i] : i;
    const struct sl_builder* b = &s->root.children[i];
    if (p->base[c] == NULL || p->width[c] != b->value_width) continue;
    s->place_at[i] = p->base[c] + p->first_row * p->width[c];
  }
  return 0;
}

/// Before a batch: its placed columns write at the split's next rows in the
/// caller's memory, room for the rows the split has left. A split with more
/// rows than planned goes on in its own memory.
static void place_batch(struct avro_split* s) {
  int64_t room = s->place->rows - s->rows_out;
  for (int64_t i = 0; room > 0 && i < s->root.n_children; ++i) {
    struct sl_builder* b = &s->root.children[i];
    if (s->place_at[i] == NULL || b->length != 0) continue;
    (void)sl_builder_borrow_values(b, s->place_at[i] + s->rows_out * b->value_width, room,
                                   s->place->owner);  // EINVAL: not placeable, decoded as usual
  }
}

static int split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                      int64_t n_columns, void** state, int* projected, struct sluice_error* error) {
  struct avro_reader* r = reader;
  const char* name = r->source->name;
  *state = NULL;
  *projected = 1;
  for (int64_t i = 0; columns && i < n_columns; ++i)
    if (columns[i] < 0 || columns[i] >= r->arrow.n_children)
      return sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range (%" PRId64
                          " columns)", name, columns[i], r->arrow.n_children);
  struct avro_split* s = sl_calloc(r->alloc, 1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  s->r = r;
  s->drop_from = -1;
  int rc = 0;
  if (r->forward) {
    if (split->index != 0 || r->scanned)
      rc = sl_error_set(error, EINVAL, "%s: an Avro stream can be scanned only once", name);
    r->scanned = 1;
    s->fpos = r->pos;
    s->numbered = 1;  // read from the first block on
  } else {
    // A split owns the blocks that start in [offset, end); the first split
    // starts at the first block, the others find theirs after a sync marker.
    s->numbered = split->offset <= r->pos;
    s->pos = s->numbered ? r->pos : -1;
    s->end = split->offset + split->length;
    s->begin = split->offset;
    s->chain = chain_index(r, split->offset);
  }
  struct ArrowSchema proj = {0};
  if (rc == 0) {
    rc = columns ? sl_schema_project(&r->arrow, columns, n_columns, r->alloc, &proj, error)
                 : sl_schema_copy(&r->arrow, r->alloc, &proj, error);
  }
  if (rc == 0) rc = sl_builder_init_from_schema(&s->root, &proj, r->alloc, error);
  if (proj.release) proj.release(&proj);
  if (rc == 0) {
    s->bld = sl_calloc(r->alloc, (size_t)r->prog.n_ops, sizeof *s->bld);
    if (s->bld == NULL) rc = sl_error_set(error, ENOMEM, "%s: out of memory", name);
  }
  if (rc == 0) rc = sl_avro_program_bind(&r->prog, &s->root, columns, columns ? n_columns : 0, s->bld, error);
  if (rc != 0) {
    if (strncmp(error->message, name, strlen(name)) != 0) sl_error_prefix(error, "%s", name);
    split_close(s);
    return rc;
  }
  s->dec.prog = &r->prog;
  s->dec.bld = s->bld;
  s->dec.empty_left = AVRO_MAX_EMPTY_VALUES;
  s->flat = sl_avro_flat_row(&s->dec);
  if (split->place != NULL && !r->forward && set_place(s, split->place, columns) != 0) {
    split_close(s);
    return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  }
  *state = s;
  return 0;
}

/// Ranged splits read their bytes in one request: from the sync marker
/// before their first byte to a little past their end, where the last
/// block usually ends. Blocks outside it are read on their own. For a
/// mapped file this is a view that costs nothing; for HTTP and S3 it is one
/// GET instead of one per block.
#define AVRO_RANGE_TAIL ((int64_t)1 << 20)
static int fetch_range(struct avro_split* s, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  if (s->range.data != NULL) return 0;
  int64_t lo = s->begin - AVRO_SYNC_LEN > r->pos ? s->begin - AVRO_SYNC_LEN : r->pos;
  int64_t hi = s->end > r->source->size - AVRO_RANGE_TAIL ? r->source->size
                                                          : s->end + AVRO_RANGE_TAIL;
  if (hi <= lo) return 0;
  s->range_off = lo;
  return sl_source_read_at(r->source, lo, hi - lo, &s->range, error);
}

/// The split's first block. A mapped file's is walked to (chain_start).
/// Else (a remote object, where a walk is a request per block) it is right
/// after the first sync marker that ends at or after its first byte, starts
/// before its end and is followed by a block (none: no blocks). When that
/// marker is not believed (marker_believed), it may be a copy inside a
/// block's data: the first block is then found by walking the blocks from
/// the nearest split start known before it (chain_start), as a pipe reads them.
static int find_first_block(struct avro_split* s, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  int64_t at;
  SL_RETURN_NOT_OK(fetch_range(s, error));
  if (r->source->mapped) {
    int64_t number;
    SL_RETURN_NOT_OK(chain_start(r, s->begin, &s->pos, &number, error));
    s->numbered = 1;
    s->blocks_seen = number;
    return 0;
  }
  SL_RETURN_NOT_OK(find_block_start(r, &s->range, s->range_off, s->begin - AVRO_SYNC_LEN,
                                    s->end - AVRO_SYNC_LEN, &at, error));
  s->pos = at < 0 ? INT64_MAX : at + AVRO_SYNC_LEN;
  if (at < 0 || marker_believed(r, &s->range, s->range_off, at)) return 0;
  // Walked from the nearest split whose first block is known (a request a
  // block: from the file's first block, every such split walked the whole
  // file before it, requests growing with the square of its size).
  int64_t number;
  SL_RETURN_NOT_OK(chain_start(r, s->begin, &s->pos, &number, error));
  if (s->pos >= s->end) {
    s->pos = INT64_MAX;
  } else {
    s->numbered = 1;
    s->blocks_seen = number;
  }
  return 0;
}

/// After the split's last block (which ends at s->pos, at or past its end):
/// a mapped file's next split starts there (chain_start), which the split
/// publishes. Else the next split starts at the first believed marker
/// ending at or after that end that a block follows (find_first_block),
/// else where a walk from the first block leads, which is s->pos. So that
/// no block is read twice or skipped, the block at s->pos must pass the
/// test (a corrupt or truncated one would be stepped over, its rows lost,
/// so it is the error it is when read in one pass), and no marker inside
/// the data decoded here past the end may be believed (a copy of the
/// marker followed by a megabyte of what looks like blocks would make the
/// object unsplittable: an error rather than a wrong answer).
static int check_next_split_start(struct avro_split* s, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  // A mapped file's splits start where the walk leads (chain_start): this
  // split's end is the next one's start, which it need not walk to again.
  // (A remote split found by its marker knows no block numbers: it does not publish.)
  if (s->chain >= 0 && s->pos != INT64_MAX && s->numbered) {
    chain_publish(r, s->chain + 1, s->pos, s->blocks_seen);
  }
  if (s->pos == INT64_MAX || s->pos >= r->source->size) return 0;
  char label[48];
  if (s->numbered) snprintf(label, sizeof label, "block %" PRId64, s->blocks_seen);
  else snprintf(label, sizeof label, "block");
  SL_RETURN_NOT_OK(check_block_at(r, &s->range, s->range_off, s->pos, label, NULL, error));
  if (r->source->mapped) return 0;
  for (int64_t from = s->end - AVRO_SYNC_LEN; from < s->pos - AVRO_SYNC_LEN;) {
    int64_t at;
    SL_RETURN_NOT_OK(find_block_start(r, &s->range, s->range_off, from, s->pos - AVRO_SYNC_LEN,
                                      &at, error));
    if (at < 0) return 0;
    if (marker_believed(r, &s->range, s->range_off, at)) {
      return sl_error_set(error, EILSEQ, "%s: byte %" PRId64 ": the sync marker also occurs "
                          "inside the data of the %s at byte %" PRId64 ", followed by what "
                          "looks like blocks, so the file cannot be read in byte-range splits "
                          "(read it as one split with -O split_size=%" PRId64 " or more, or from "
                          "a pipe or a local copy)", r->source->name, at, s->label,
                          s->block.header, r->source->size);
    }
    from = at + 1;
  }
  return 0;
}

/// The error for a block that passes max_block_bytes: `why` says how.
static int block_too_large(struct avro_split* s, const char* why, struct sluice_error* error) {
  return sl_error_set(error, ERANGE, "%s: %s at byte %" PRId64 ": %s (the Avro option "
                      "max_block_bytes, by default the memory budget and at least 256 MiB: "
                      "raise it to read larger blocks)", s->r->source->name, s->label,
                      s->block.header, why);
}

/// A block whose bytes are copied (a pipe's, a remote object's; a mapped
/// file's are not) takes its declared size in memory: at most max_block_bytes.
static int check_copied_size(struct avro_split* s, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  if (r->source->mapped || s->block.size <= r->max_block_bytes) return 0;
  char why[128];
  snprintf(why, sizeof why, "%" PRId64 " bytes declared, more than %" PRId64, s->block.size,
           r->max_block_bytes);
  return block_too_large(s, why, error);
}

/// Makes the next block current; *done when the split has no more.
static int load_block(struct avro_split* s, int* done, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  const char* name = r->source->name;
  *done = 0;
  drop_decoded(s, !r->forward && s->pos >= s->end);
  sl_view_release(&s->view);
  s->loaded = 0;
  if (s->numbered) snprintf(s->label, sizeof s->label, "block %" PRId64, s->blocks_seen);
  else snprintf(s->label, sizeof s->label, "block");
  int64_t data_len;
  if (r->forward) {
    int eof;
    SL_RETURN_NOT_OK(read_block_header(r, &s->fpos, s->label, &s->block, &eof, error));
    if (eof) {
      *done = 1;
      return 0;
    }
    s->blocks_seen++;
    if (s->block.size > INT64_MAX - AVRO_SYNC_LEN)
      return sl_error_set(error, EILSEQ, "%s: %s: bad size", name, s->label);
    SL_RETURN_NOT_OK(check_copied_size(s, error));
    int64_t total = s->block.size + AVRO_SYNC_LEN;
    if (total <= AVRO_FORWARD_CHUNK) {
      // Data and sync in one read: a source may recycle a view's bytes on the next.
      SL_RETURN_NOT_OK(input_read(r, &s->fpos, total, &s->view, NULL, "block", error));
      s->base = s->view.data;
    } else {
      // A pipe's declared size cannot be checked against the file: gather the
      // block in chunks so memory grows only with bytes that really arrive.
      s->raw.size = 0;
      for (int64_t left = total; left > 0;) {
        int64_t chunk = left < AVRO_FORWARD_CHUNK ? left : AVRO_FORWARD_CHUNK;
        struct sl_view v;
        SL_RETURN_NOT_OK(input_read(r, &s->fpos, chunk, &v, NULL, "block", error));
        int rc = sl_avro_buf_reserve(&s->raw, s->raw.size + (size_t)chunk, r->alloc, error);
        if (rc == 0) memcpy(s->raw.data + s->raw.size, v.data, (size_t)chunk);
        sl_view_release(&v);
        if (rc != 0) return sl_error_prefix(error, "%s: %s", name, s->label);
        s->raw.size += (size_t)chunk;
        left -= chunk;
      }
      s->base = s->raw.data;
    }
  } else {
    if (s->pos < 0) SL_RETURN_NOT_OK(find_first_block(s, error));
    if (s->pos >= s->end || s->pos >= r->source->size) {
      *done = 1;
      return check_next_split_start(s, error);
    }
    SL_RETURN_NOT_OK(fetch_range(s, error));
    // The header's two varints, from the split's range when it holds them.
    struct sl_view h;
    int64_t hn = r->source->size - s->pos < 20 ? r->source->size - s->pos : 20;
    SL_RETURN_NOT_OK(range_bytes(r, &s->range, s->range_off, s->pos, hn, &h, error));
    int rc = parse_block_header(r, h.data, hn, s->pos, s->label, &s->block, error);
    sl_view_release(&h);
    SL_RETURN_NOT_OK(rc);
    s->blocks_seen++;
    SL_RETURN_NOT_OK(check_copied_size(s, error));
    // check_block_header made sure that the data and the sync fit in the file.
    SL_RETURN_NOT_OK(range_bytes(r, &s->range, s->range_off, s->block.data,
                                 s->block.size + AVRO_SYNC_LEN, &s->view, error));
    s->base = s->view.data;
    s->pos = s->block.data + s->block.size + AVRO_SYNC_LEN;
    if (s->drop_from < 0) s->drop_from = s->block.header;
    s->drop_end = s->pos;
  }
  if (memcmp(s->base + s->block.size, r->sync, AVRO_SYNC_LEN) != 0)
    return bad_sync(r, s->label, s->block.data + s->block.size, error);
  data_len = s->block.size;
  const uint8_t* data = s->base;
  if (s->block.count == 0) {
    data_len = 0;  // writers may leave an empty block's data empty, even when compressing
  } else if (r->codec != AVRO_CODEC_NULL) {
    int rc = sl_avro_decompress(r->codec, data, (size_t)data_len, (size_t)r->max_block_bytes,
                                &s->buf, r->alloc, error);
    if (rc == ERANGE) {
      char why[256];  // the codec's reason is short
      snprintf(why, sizeof why, "its %" PRId64 " bytes of %.200s", data_len, error->message);
      return block_too_large(s, why, error);
    }
    if (rc != 0)
      return sl_error_prefix(error, "%s: %s at byte %" PRId64, name, s->label,
                             s->block.header);
    data = s->buf.data;
    data_len = (int64_t)s->buf.size;
  }
  int64_t min = r->prog.ops[0].min_size;
  if (min > 0 && s->block.count > data_len / min)
    return sl_error_set(error, EILSEQ, "%s: %s at byte %" PRId64 ": %" PRId64
                        " objects cannot fit in %" PRId64 " bytes", name, s->label,
                        s->block.header, s->block.count, data_len);
  if (min == 0 && s->block.count > s->dec.empty_left)
    return sl_error_set(error, EILSEQ, "%s: %s at byte %" PRId64 ": %" PRId64 " objects that "
                        "take no bytes (the schema holds only nulls and empty records) pass the "
                        "limit of %" PRId64 " such values per split (%" PRId64 " left)", name,
                        s->label, s->block.header, s->block.count, AVRO_MAX_EMPTY_VALUES,
                        s->dec.empty_left);
  if (min == 0) s->dec.empty_left -= s->block.count;
  s->dec.p = data;
  s->dec.end = data + data_len;
  s->rows_left = s->block.count;
  s->loaded = 1;
  return 0;
}

/// The file offset (or, for compressed blocks, the block) an error is at.
static int decode_error(struct avro_split* s, int64_t row, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  const uint8_t* base = r->codec == AVRO_CODEC_NULL ? s->base : s->buf.data;
  int64_t off = (int64_t)(s->dec.p - base);
  if (r->codec == AVRO_CODEC_NULL)
    return sl_error_prefix(error, "%s: %s at byte %" PRId64 ": object %" PRId64,
                           r->source->name, s->label, s->block.data + off, row);
  return sl_error_prefix(error, "%s: %s at byte %" PRId64 " (decompressed offset %" PRId64
                         "): object %" PRId64, r->source->name, s->label, s->block.header, off,
                         row);
}

/// Sizes the top-level fixed-width columns for the batch about to be decoded
/// from the current block's rows per byte over the split's bytes left, plus
/// one block for the block that crosses the split's end; at most batch_rows,
/// so a forged count costs nothing more. Spares the columns their doubling
/// copies, and their pages are mapped in one call.
static int reserve_batch(struct avro_split* s, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  if (r->forward || !s->loaded) return 0;
  if (s->place_at != NULL) place_batch(s);
  int64_t left = s->end > s->pos ? s->end - s->pos : 0;
  int64_t block_bytes = s->pos - s->block.header;  // > 0: header, data and sync
  double per_byte = (double)s->block.count / (double)block_bytes;
  double guess = (double)s->rows_left + (double)s->block.count + per_byte * (double)left;
  int64_t expect = guess < (double)r->batch_rows ? (int64_t)guess : r->batch_rows;
  for (int64_t i = 0; i < s->root.n_children; ++i) {
    struct sl_builder* c = &s->root.children[i];
    // A placed column has room for the split's rows: more is a bad guess
    // (the block past the split's end is counted), not a reason to move.
    int64_t want = c->values.borrowed != NULL && expect > c->capacity - c->length
                       ? c->capacity - c->length
                       : expect;
    if (c->value_width > 0 && sl_builder_reserve(c, want) != 0)
      return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  }
  // Arrays of doubles or floats (W2's rows) take exactly their width per item
  // in the file, so the split's bytes bound the items: from this block's
  // start to the split's end, plus the block that crosses the end (guessed
  // as large as this one). Capacity for them spares the item buffer its
  // doubling copies (memory is touched only as items arrive); without that
  // last block, every split ended with a copy of its whole buffer (W2:
  // 93% of the page faults).
  const struct avro_op* top = &r->prog.ops[0];
  const int32_t* kids = top->n_kids > 0 ? r->prog.kids + top->kids : NULL;
  for (int32_t k = 0; k < top->n_kids; ++k) {
    const struct avro_op* op = &r->prog.ops[kids[k]];
    if (op->kind != OP_ARRAY || op->n_kids != 1) continue;
    const struct avro_op* item = &r->prog.ops[r->prog.kids[op->kids]];
    struct sl_builder* values = s->bld[r->prog.kids[op->kids]];
    int64_t width = item->kind == OP_DOUBLE ? 8 : item->kind == OP_FLOAT ? 4 : 0;
    if (values == NULL || width == 0 || values->value_width != width) continue;
    int64_t bytes = left + 2 * block_bytes;
    if (bytes > AVRO_BATCH_BYTES) bytes = AVRO_BATCH_BYTES;
    if (sl_buffer_grow_to(&values->values, values->values.size + bytes) != 0)
      return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  }
  return 0;
}

static int split_next_inner(struct avro_split* s, struct ArrowArray* out, struct sluice_error* error) {
  struct avro_reader* r = s->r;
  int64_t rows = 0;
  int reserved = 0;
  while (rows < r->batch_rows) {
    if (!s->loaded || s->rows_left == 0) {
      if (s->loaded && s->dec.p != s->dec.end)
        return sl_error_set(error, EILSEQ, "%s: %s at byte %" PRId64 ": %td bytes left over "
                            "after its %" PRId64 " objects", r->source->name, s->label,
                            s->block.header, s->dec.end - s->dec.p, s->block.count);
      int done;
      SL_RETURN_NOT_OK(load_block(s, &done, error));
      if (done) {
        s->finished = 1;
        break;
      }
      continue;
    }
    if (!reserved) {
      SL_RETURN_NOT_OK(reserve_batch(s, error));
      reserved = 1;
    }
    int64_t n = s->rows_left < r->batch_rows - rows ? s->rows_left : r->batch_rows - rows;
    // Check the batch's memory every few rows, unless rows are narrow numbers
    // (at most AVRO_FLAT_MAX * 8 bytes each, so batch_rows of them stay small).
    if (n > 64 && !s->flat) n = 64;
    int64_t done = 0;
    int rc = s->flat ? sl_avro_decode_flat_rows(&s->dec, n, &done, error)
                     : sl_avro_decode_rows(&s->dec, n, &done, error);
    if (rc != 0) return decode_error(s, s->block.count - s->rows_left + done, error);
    rows += n;
    s->rows_left -= n;
    if (sl_builder_byte_size(&s->root) >= AVRO_BATCH_BYTES) break;
  }
  if (rows == 0) return 0;
  if (sl_builder_struct_finish_rows(&s->root, rows) != 0)
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  s->rows_out += rows;
  int rc = sl_builder_finish(&s->root, out, error);
  if (rc != 0) sl_error_prefix(error, "%s", r->source->name);
  return rc;
}

static int split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct avro_split* s = state;
  out->release = NULL;
  if (s->finished) return 0;
  int rc = split_next_inner(s, out, error);
  if (rc != 0) {
    s->finished = 1;
    sl_builder_reset(&s->root);
    if (out->release) out->release(out);
  }
  return rc;
}

static int reader_probe(const uint8_t* head, int64_t n) {
  return n >= 4 && memcmp(head, AVRO_MAGIC, 4) == 0 ? 100 : 0;
}

static const char* const k_extensions[] = {".avro", NULL};

static const struct sl_format_reader k_avro_reader = {
    .name = "avro",
    .extensions = k_extensions,
    .probe = reader_probe,
    .open = reader_open,
    .schema = reader_schema,
    .plan_splits = reader_plan,
    .split_open = split_open,
    .split_next = split_next,
    .split_close = split_close,
    .close = reader_close,
    .count_split_rows = reader_count_split_rows,
};

const struct sl_format_reader* sl_avro_reader(void) { return &k_avro_reader; }
