// Length-prefixed message streams: see lenprefix_reader.h. The reader pulls
// the stream through sl_source_read_some in chunks (of what has arrived) and
// copies each message into the batch's binary column (a binary column needs
// its bytes contiguous, and the prefixes sit between them).
#include "lenprefix_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_builder.h"
#include "core/sl_endian.h"
#include "core/sl_error.h"
#include "core/sl_options.h"
#include "core/sl_value_text.h"
#include "io/sl_compression.h"
#include "io/sl_source.h"
#include "io/sl_source_inflate.h"

/// Bytes asked of the source per forward read.
#define LP_CHUNK ((int64_t)1 << 20)
/// Rows per batch unless the caller asks otherwise.
#define LP_DEFAULT_BATCH_ROWS 65536
/// Message bytes per batch before it is handed over.
#define LP_BATCH_BYTES ((int64_t)8 << 20)
/// Largest message a binary (32-bit offsets) column can hold on its own.
#define LP_MAX_MESSAGE ((int64_t)INT32_MAX)
/// max_row_bytes's floor, as CSV's (CSV_MAX_ROW_BYTES): the default memory
/// budget. A longer message is an error before any room is made for it.
#define LP_MAX_ROW_BYTES ((int64_t)256 << 20)

enum lp_kind { LP_VARINT, LP_U8, LP_U16LE, LP_U16BE, LP_U32LE, LP_U32BE, LP_U64LE, LP_U64BE };

struct lp_kind_name {
  const char* name;
  enum lp_kind kind;
  int width;  ///< bytes of a fixed-width prefix (0 for varint)
  int big_endian;
};

static const struct lp_kind_name k_kinds[] = {
    {"varint", LP_VARINT, 0, 0}, {"u8", LP_U8, 1, 0},       {"u16le", LP_U16LE, 2, 0},
    {"u16be", LP_U16BE, 2, 1},   {"u32le", LP_U32LE, 4, 0}, {"u32be", LP_U32BE, 4, 1},
    {"u64le", LP_U64LE, 8, 0},   {"u64be", LP_U64BE, 8, 1},
};

struct lp_reader {
  struct sl_source* source;    ///< the object, or `inflated`
  struct sl_source* inflated;  ///< a compressed object's inflated bytes (owned), or NULL
  /// Read as it is, but its first bytes are those of this compression
  /// (a .gz piped in, or named without its suffix): errors in its framing say so.
  const char* looks_compressed;
  const struct sluice_allocator* alloc;
  struct lp_kind_name prefix;
  int64_t batch_rows;
  int64_t max_row_bytes;  ///< the longest message read (max_row_bytes=)
  /// compression=: -1 to infer it from the name, else what the input is
  /// (SL_COMPRESS_NONE: read as it is, whatever the name)
  int compression;
  int64_t messages;       ///< messages appended so far (for errors)
  struct ArrowSchema schema;
  struct sl_builder batch;
  struct sl_view chunk;  ///< the current forward read
  int64_t chunk_pos;     ///< next unread byte in chunk
  int64_t pos;           ///< stream offset of the next unread byte
  int eof;               ///< the source has no more bytes
  atomic_int scanned;    ///< the one split was opened (two scans may open it at once)
  int finished;          ///< end of stream or error seen
  /// A message whose prefix is read but whose bytes did not fit the batch
  /// (binary offsets are 32-bit): it starts the next batch.
  int pending;
  uint64_t pending_length;
  int64_t pending_at;
};

/* ---- Options --------------------------------------------------------------- */

static int parse_options(struct lp_reader* r, const char* options, struct sluice_error* error) {
  static const char k_key[] = "length_prefix";
  r->prefix = k_kinds[0];
  r->compression = -1;
  struct sl_option o;
  int more;
  while ((more = sl_option_next(&options, &o)) != 0) {
    if (more < 0) {
      return sl_error_set(error, EINVAL, "lenprefix option '%.*s': expected key=value",
                          (int)o.key_len, o.key);
    }
    if (sl_option_is(&o, "max_row_bytes")) {
      if (sl_parse_size(o.value, o.value_len, 1, INT64_MAX, &r->max_row_bytes) != 0) {
        return sl_error_set(error, EINVAL, "lenprefix option max_row_bytes='%.*s': expected a "
                            "positive size (e.g. 512m)", (int)o.value_len, o.value);
      }
      continue;
    }
    if (sl_option_is(&o, "compression")) {
      char name[16];
      enum sl_compression kind = SL_COMPRESS_NONE;
      if (o.value_len >= sizeof name) o.value_len = sizeof name - 1;  // unknown either way
      memcpy(name, o.value, o.value_len);
      name[o.value_len] = '\0';
      if (strcmp(name, "infer") == 0) {
        r->compression = -1;
      } else if (sl_compression_of_option(name, &kind) == 0) {
        r->compression = (int)kind;
      } else {
        return sl_error_set(error, EINVAL, "lenprefix option compression='%.*s': expected one of "
                            "infer (from the name), none, gzip, zstd, bzip2, xz",
                            (int)o.value_len, o.value);
      }
      continue;
    }
    if (!sl_option_is(&o, k_key)) {
      return sl_error_set(error, EINVAL, "unknown lenprefix option '%.*s' (known: %s, "
                          "max_row_bytes, compression)", (int)o.key_len, o.key, k_key);
    }
    int found = 0;
    for (size_t i = 0; i < sizeof k_kinds / sizeof k_kinds[0]; ++i) {
      if (strlen(k_kinds[i].name) == o.value_len &&
          strncmp(k_kinds[i].name, o.value, o.value_len) == 0) {
        r->prefix = k_kinds[i];
        found = 1;
      }
    }
    if (!found) {
      return sl_error_set(error, EINVAL,
                          "lenprefix option length_prefix='%.*s': expected one of varint, "
                          "u8, u16le, u16be, u32le, u32be, u64le, u64be",
                          (int)o.value_len, o.value);
    }
  }
  return 0;
}

/* ---- Forward byte access ---------------------------------------------------- */

/// Makes sure the current chunk has an unread byte unless the stream ended.
static int lp_fill(struct lp_reader* r, struct sluice_error* error) {
  while (!r->eof && r->chunk_pos >= r->chunk.size) {
    sl_view_release(&r->chunk);
    r->chunk_pos = 0;
    SL_RETURN_NOT_OK(sl_source_read_some(r->source, LP_CHUNK, &r->chunk, error));
    if (r->chunk.size == 0) r->eof = 1;
  }
  return 0;
}

/// Copies up to `n` bytes of the stream into `dst` (NULL = skip them);
/// *got < n only at the end of the stream.
static int lp_take(struct lp_reader* r, uint8_t* dst, int64_t n, int64_t* got,
                   struct sluice_error* error) {
  *got = 0;
  while (*got < n) {
    SL_RETURN_NOT_OK(lp_fill(r, error));
    if (r->eof) break;
    int64_t avail = r->chunk.size - r->chunk_pos;
    int64_t k = n - *got < avail ? n - *got : avail;
    if (dst != NULL) memcpy(dst + *got, r->chunk.data + r->chunk_pos, (size_t)k);
    r->chunk_pos += k;
    r->pos += k;
    *got += k;
  }
  return 0;
}

/// Decodes a length prefix of `kind` (`width` bytes if fixed, most
/// significant first if `big_endian`) that lies wholly in p[0, avail):
/// returns its width in bytes, or 0 when it does not (or is malformed),
/// leaving it to lp_read_prefix to read across chunks or report. Always
/// inlined, so that a caller passing constants gets a loop of its own.
static SL_ALWAYS_INLINE int lp_prefix_at(enum lp_kind kind, int width, int big_endian,
                                         const uint8_t* p, int64_t avail, uint64_t* length) {
  if (kind == LP_VARINT) {
    uint64_t value = 0;
    for (int i = 0; i < 10 && i < avail; ++i) {
      if (i == 9 && p[i] > 1) return 0;
      value |= (uint64_t)(p[i] & 0x7f) << (7 * i);
      if ((p[i] & 0x80) == 0) {
        *length = value;
        return i + 1;
      }
    }
    return 0;
  }
  if (avail < width) return 0;
  uint64_t value = 0;
  for (int i = 0; i < width; ++i) {
    int shift = big_endian ? 8 * (width - 1 - i) : 8 * i;
    value |= (uint64_t)p[i] << shift;
  }
  *length = value;
  return width;
}

/// Reads the next length prefix. *end = 1 when the stream ends cleanly
/// before it.
static int lp_read_prefix(struct lp_reader* r, uint64_t* length, int* end,
                          struct sluice_error* error) {
  int64_t at = r->pos;
  *end = 0;
  *length = 0;
  SL_RETURN_NOT_OK(lp_fill(r, error));
  if (r->eof) {
    *end = 1;
    return 0;
  }
  // Gather the prefix's bytes (they may cross chunks), then decode them as
  // the fast path does.
  uint8_t bytes[10];
  int n = 0;
  if (r->prefix.kind == LP_VARINT) {
    for (;;) {
      int64_t got;
      SL_RETURN_NOT_OK(lp_take(r, &bytes[n], 1, &got, error));
      if (got == 0) {
        return sl_error_set(error, EILSEQ,
                            "%s: offset %" PRId64 ": truncated varint length prefix",
                            r->source->name, at);
      }
      if ((bytes[n++] & 0x80) == 0 || n == 10) break;
    }
  } else {
    int64_t got;
    n = r->prefix.width;
    SL_RETURN_NOT_OK(lp_take(r, bytes, n, &got, error));
    if (got < n) {
      return sl_error_set(error, EILSEQ,
                          "%s: offset %" PRId64 ": truncated %s length prefix (%" PRId64
                          " of %d bytes)",
                          r->source->name, at, r->prefix.name, got, n);
    }
  }
  // All n bytes are there: only a varint whose 10th byte carries more than
  // the top bit of a 64-bit value (or continues) fails.
  if (lp_prefix_at(r->prefix.kind, r->prefix.width, r->prefix.big_endian, bytes, n, length) ==
      0) {
    return sl_error_set(error, EILSEQ,
                        "%s: offset %" PRId64 ": varint length prefix overflows 64 bits",
                        r->source->name, at);
  }
  return 0;
}

/// rc, with a hint added to `error` when the input looked compressed.
static int framing_error(const struct lp_reader* r, int rc, struct sluice_error* error) {
  if (r->looks_compressed != NULL) {
    size_t used = strlen(error->message);
    snprintf(error->message + used, sizeof error->message - used, " (the input starts as %s "
             "data does: compression=%s reads it inflated, compression=none as it is)",
             r->looks_compressed, r->looks_compressed);
  }
  return rc;
}

/// Appends the next message to the batch. *end = 1 at a clean end of stream;
/// *full = 1 when the message does not fit beside the batch's (it is then
/// r->pending, for the next batch).
static int lp_read_message(struct lp_reader* r, int* end, int* full, struct sluice_error* error) {
  int64_t at = r->pos;
  uint64_t length;
  *full = 0;
  if (r->pending) {
    r->pending = 0;
    length = r->pending_length;
    at = r->pending_at;
  } else {
    SL_RETURN_NOT_OK(lp_read_prefix(r, &length, end, error));
    if (*end) return 0;
  }
  int64_t size = r->source->size;
  if (size >= 0 && length > (uint64_t)(size - r->pos)) {
    return framing_error(r, sl_error_set(error, EILSEQ,
                        "%s: offset %" PRId64 ": truncated message (length %" PRIu64
                        ", only %" PRId64 " bytes left)",
                        r->source->name, at, length, size - r->pos), error);
  }
  if (length > (uint64_t)r->max_row_bytes) {
    return framing_error(r, sl_error_set(error, ERANGE,
                        "%s: message %" PRId64 " (offset %" PRId64 "): %" PRIu64 " bytes, longer "
                        "than %" PRId64 " (the lenprefix option max_row_bytes, by default the "
                        "memory budget and at least 256 MiB: raise it to read longer messages)",
                        r->source->name, r->messages + 1, at, length, r->max_row_bytes), error);
  }
  if (length > (uint64_t)LP_MAX_MESSAGE) {
    return sl_error_set(error, EFBIG,
                        "%s: offset %" PRId64 ": message of %" PRIu64
                        " bytes is larger than a binary value can be (2 GiB)",
                        r->source->name, at, length);
  }
  struct sl_builder* column = sl_builder_child(&r->batch, 0);
  if (column->length > 0 && length > (uint64_t)(LP_MAX_MESSAGE - column->extra.size)) {
    r->pending = 1;
    r->pending_length = length;
    r->pending_at = at;
    *full = 1;
    return 0;
  }
  if (sl_builder_reserve(column, 1) != 0) {
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  }
  // Room grows with the bytes that actually arrive, so a bogus length on a
  // pipe fails as truncated rather than as a huge allocation.
  int64_t left = (int64_t)length;
  while (left > 0) {
    int64_t piece = left < LP_CHUNK ? left : LP_CHUNK;
    int rc = sl_builder_reserve_bytes(column, piece);
    if (rc != 0) {
      return sl_error_set(error, rc, "%s: offset %" PRId64 ": no room for a %" PRIu64
                          "-byte message", r->source->name, at, length);
    }
    int64_t got;
    SL_RETURN_NOT_OK(lp_take(r, column->extra.data + column->extra.size, piece, &got, error));
    column->extra.size += got;
    left -= got;
    if (got < piece) {
      return framing_error(r, sl_error_set(error, EILSEQ,
                          "%s: offset %" PRId64 ": truncated message (length %" PRIu64
                          ", only %" PRId64 " bytes left)",
                          r->source->name, at, length, (int64_t)length - left), error);
    }
  }
  // The bytes are in place: record the row's end offset.
  sl_builder_append_binary_unsafe(column, NULL, 0);
  r->messages++;
  return 0;
}

/// Small messages are copied as this many bytes when both ends have room, so
/// the copy is a fixed-size one the compiler inlines instead of a call.
#define LP_SHORT_COPY 64

/// A run of messages copied from one chunk: lp_copy_run's arguments.
struct lp_run {
  const uint8_t* p;  ///< the chunk's unread bytes
  int64_t avail;     ///< how many
  int64_t most;      ///< rows at most
  uint8_t* data;     ///< the column's bytes
  int64_t size;      ///< bytes in data so far (updated)
  int64_t limit;     ///< size may not pass this
  uint64_t longest;  ///< a longer message is left to lp_read_message
  int32_t* ends;     ///< where the next rows' end offsets go
  int64_t pos;       ///< bytes of p consumed (out)
  int64_t n;         ///< rows appended (out)
};

/// lp_read_run's loop for one framing (constant arguments).
static SL_ALWAYS_INLINE void lp_copy_run(struct lp_run* run, enum lp_kind kind, int width,
                                         int big_endian) {
  const uint8_t* p = run->p;
  uint8_t* data = run->data;
  int32_t* ends = run->ends;
  int64_t avail = run->avail, size = run->size, limit = run->limit, pos = 0, n = 0;
  const uint64_t longest = run->longest;
  while (n < run->most && size < LP_BATCH_BYTES) {
    uint64_t length;
    int w = lp_prefix_at(kind, width, big_endian, p + pos, avail - pos, &length);
    if (w == 0 || length > (uint64_t)(avail - pos - w) || length > (uint64_t)(limit - size) ||
        length > longest) {
      break;
    }
    const uint8_t* src = p + pos + w;
    if (length <= LP_SHORT_COPY && avail - pos - w >= LP_SHORT_COPY) {
      memcpy(data + size, src, LP_SHORT_COPY);
    } else {
      memcpy(data + size, src, (size_t)length);
    }
    size += (int64_t)length;
    pos += w + (int64_t)length;
    ends[n++] = (int32_t)size;  // < LP_BATCH_BYTES + a chunk
  }
  run->size = size;
  run->pos = pos;
  run->n = n;
}

/// The fast path: appends the messages (up to `max_rows`, and while the batch
/// is under LP_BATCH_BYTES) that lie wholly in the current chunk, straight
/// from it; returns how many. The caller goes on with lp_read_message.
static int64_t lp_read_run(struct lp_reader* r, struct sl_builder* column, int64_t max_rows) {
  int64_t avail = r->chunk.size - r->chunk_pos;
  if (avail <= 0 || max_rows <= 0) return 0;
  const uint8_t* p = r->chunk.data + r->chunk_pos;
  // Every message takes at least one byte of the chunk and gives at most
  // the chunk's bytes.
  int64_t most = max_rows < avail ? max_rows : avail;
  // Room for the whole chunk, unless the batch has room already (sized
  // from the previous batch by lp_split_next): then the run ends where that
  // room does, instead of doubling the buffer (a copy of the batch) for the
  // chunk's bytes beyond the batch's last row.
  int64_t room = column->extra.capacity - column->extra.size;
  if (sl_builder_reserve(column, most) != 0 ||
      (room < 2 * LP_SHORT_COPY &&
       sl_builder_reserve_bytes(column, avail + LP_SHORT_COPY) != 0)) {
    return 0;  // lp_read_message reserves one at a time and reports
  }
  struct lp_run run = {
      .p = p,
      .avail = avail,
      .most = most,
      .data = column->extra.data,
      .size = column->extra.size,
      .limit = column->extra.capacity - LP_SHORT_COPY,  // a short copy's 64 bytes fit
      .longest = (uint64_t)r->max_row_bytes,
      .ends = (int32_t*)column->values.data + column->length + 1,
  };
  switch (r->prefix.kind) {  // one loop per framing, its prefix decoding inlined
    case LP_VARINT: lp_copy_run(&run, LP_VARINT, 0, 0); break;
    case LP_U8: lp_copy_run(&run, LP_U8, 1, 0); break;
    case LP_U16LE: lp_copy_run(&run, LP_U16LE, 2, 0); break;
    case LP_U16BE: lp_copy_run(&run, LP_U16BE, 2, 1); break;
    case LP_U32LE: lp_copy_run(&run, LP_U32LE, 4, 0); break;
    case LP_U32BE: lp_copy_run(&run, LP_U32BE, 4, 1); break;
    case LP_U64LE: lp_copy_run(&run, LP_U64LE, 8, 0); break;
    case LP_U64BE: lp_copy_run(&run, LP_U64BE, 8, 1); break;
  }
  column->extra.size = run.size;
  column->length += run.n;
  r->messages += run.n;
  r->chunk_pos += run.pos;
  r->pos += run.pos;
  return run.n;
}

/* ---- Reader table ------------------------------------------------------------ */

static void lp_close(void* reader) {
  struct lp_reader* r = reader;
  if (r == NULL) return;
  sl_view_release(&r->chunk);
  sl_source_close(r->inflated);
  sl_builder_release(&r->batch);
  if (r->schema.release != NULL) r->schema.release(&r->schema);
  sl_free(r->alloc, r, sizeof *r);
}

/// An object named compressed (x.ldr.gz, .zst, .bz2, .xz) is inflated as it
/// is read, as CSV is. Only by name: a stream has no magic bytes, so one
/// whose first message is 0x8b bytes long starts as gzip does. A name that
/// says so over plain bytes (a server that undid its Content-Encoding) is
/// read as it is. Before, the compressed bytes were read as framing.
/// `compression=` names it instead (a pipe has no name), or says none.
static int lp_inflate_if_named(struct lp_reader* r, struct sluice_error* error) {
  const char* name = r->source->name;
  if (r->compression == SL_COMPRESS_NONE) return 0;
  if (r->compression > 0) {
    enum sl_compression kind;
    const char* unread;
    SL_RETURN_NOT_OK(sl_source_compression(r->source, &kind, &unread, error));
    if (kind != (enum sl_compression)r->compression) {
      const char* told = sl_compression_name((enum sl_compression)r->compression);
      return sl_error_set(error, EINVAL, "%s: compression=%s, but the input does not start as "
                          "%s data does", name, told, told);
    }
    SL_RETURN_NOT_OK(sl_source_inflate_open(r->source, kind, &r->inflated, error));
    r->source = r->inflated;
    return 0;
  }
  if (name == NULL || sl_compression_suffix_length(name) == 0) {
    enum sl_compression kind = SL_COMPRESS_NONE;
    const char* unread = NULL;
    if (r->compression < 0 && sl_source_compression(r->source, &kind, &unread, error) == 0 &&
        kind != SL_COMPRESS_NONE) {
      r->looks_compressed = sl_compression_name(kind);
    }
    sl_error_clear(error);  // (a hint only: the peek's failure is the read's to report)
    return 0;
  }
  return sl_source_inflate_if_compressed(&r->source, &r->inflated, name, 0, error);
}

static int lp_open(const struct sl_reader_args* args, void** reader, struct sluice_error* error) {
  *reader = NULL;
  struct lp_reader* r = sl_calloc(args->alloc, 1, sizeof *r);
  if (r == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", args->source->name);
  r->source = args->source;
  r->alloc = args->alloc;
  r->batch_rows = args->batch_size > 0 ? args->batch_size : LP_DEFAULT_BATCH_ROWS;
  int rc = parse_options(r, args->format_options, error);
  if (r->max_row_bytes == 0) {
    r->max_row_bytes =
        args->memory_budget > LP_MAX_ROW_BYTES ? args->memory_budget : LP_MAX_ROW_BYTES;
  }
  if (rc == 0) rc = sl_schema_init(&r->schema, r->alloc, "+s", "", 0, 1, error);
  if (rc == 0) rc = sl_schema_init(r->schema.children[0], r->alloc, "z", "message", 0, 0, error);
  if (rc == 0) rc = sl_builder_init_from_schema(&r->batch, &r->schema, r->alloc, error);
  if (rc != 0) {
    lp_close(r);
    return rc == ENOMEM || rc == EINVAL ? sl_error_prefix(error, "%s", args->source->name) : rc;
  }
  rc = lp_inflate_if_named(r, error);  // its errors name the object
  if (rc != 0) {
    lp_close(r);
    return rc;
  }
  *reader = r;
  return 0;
}

static int lp_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct lp_reader* r = reader;
  return sl_schema_copy(&r->schema, r->alloc, out, error);
}

static int lp_plan(void* reader, struct sl_split** splits, int64_t* n,
                   struct sluice_error* error) {
  struct lp_reader* r = reader;
  *splits = NULL;
  *n = 0;
  struct sl_split* s = sl_calloc(r->alloc, 1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  s->index = 0;
  s->offset = 0;
  s->length = r->source->size;
  s->est_bytes = LP_BATCH_BYTES;
  s->est_rows = -1;
  *splits = s;
  *n = 1;
  return 0;
}

static int lp_split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                         int64_t n_columns, void** state, int* projected,
                         struct sluice_error* error) {
  struct lp_reader* r = reader;
  (void)columns;
  (void)n_columns;
  *state = NULL;
  if (split->index != 0 || atomic_exchange(&r->scanned, 1) != 0) {
    return sl_error_set(error, EINVAL, "%s: a length-prefixed stream can be scanned only once",
                        r->source->name);
  }
  *projected = 0;  // one column: the engine projects when asked for none
  *state = r;
  return 0;
}

static int lp_split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct lp_reader* r = state;
  out->release = NULL;
  if (r->finished) return 0;
  struct sl_builder* column = sl_builder_child(&r->batch, 0);
  int64_t rows = 0;
  int rc = 0;
  // Batches after the first: room for the last one's bytes and an eighth
  // more, so that a batch rarely outgrows its buffer (W3: 11 batches, each
  // used to end with a doubling copy of its data).
  int64_t hint = column->hint_bytes;
  if (column->extra.capacity == 0 && hint > 0 && hint < LP_BATCH_BYTES &&
      sl_builder_reserve_bytes(column, hint + hint / 8 + 2 * LP_SHORT_COPY) != 0) {
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->source->name);
  }
  int full = 0;
  while (rows < r->batch_rows && column->extra.size < LP_BATCH_BYTES) {
    // (A pending message's bytes come next, not a prefix.)
    if (!r->pending) rows += lp_read_run(r, column, r->batch_rows - rows);
    if (rows == r->batch_rows || column->extra.size >= LP_BATCH_BYTES) break;
    int end = 0;
    rc = lp_read_message(r, &end, &full, error);
    if (rc != 0 || end || full) break;
    ++rows;
  }
  // Bytes that do not frame may be what corrupt data inflated to before its
  // check failed: the decompressor's error names the real fault.
  rc = sl_source_inflate_failure_first(r->inflated, rc, error);
  if (rc != 0) {
    r->finished = 1;  // no resynchronising after a framing error
    sl_builder_reset(&r->batch);
    return rc;
  }
  if (rows < r->batch_rows && column->extra.size < LP_BATCH_BYTES && !full) r->finished = 1;
  if (rows == 0) return 0;
  rc = sl_builder_struct_finish_rows(&r->batch, rows);
  if (rc != 0) {
    r->finished = 1;
    sl_builder_reset(&r->batch);
    return sl_error_set(error, rc, "%s: out of memory", r->source->name);
  }
  return sl_builder_finish(&r->batch, out, error);
}

static void lp_split_close(void* state) { (void)state; }

/// No magic bytes: picked by name or extension only.
static int lp_probe(const uint8_t* head, int64_t n) {
  (void)head;
  (void)n;
  return 0;
}

static const char* const k_extensions[] = {".lenprefix", ".ldr", NULL};

static const struct sl_format_reader k_reader = {
    .name = "lenprefix",
    .extensions = k_extensions,
    .streams = 1,
    .inflates = 1,
    .probe = lp_probe,
    .open = lp_open,
    .schema = lp_schema,
    .plan_splits = lp_plan,
    .split_open = lp_split_open,
    .split_next = lp_split_next,
    .split_close = lp_split_close,
    .close = lp_close,
    .stored_stats = NULL,
};

const struct sl_format_reader* sl_lenprefix_reader(void) { return &k_reader; }
