// The Parquet writer: Arrow record batches -> "PAR1", row groups of column
// chunks, footer (FileMetaData), footer length, "PAR1".
//
// Batches are held until a row group's worth of rows arrived: the rows of
// a batch that the unfinished row group keeps are copied before the next
// batch is asked for (its producer may reuse the memory then).
// Many tiny batches, or batches that each bring a dictionary of their own
// (a delta stream's: the whole dictionary so far), are folded into owned
// levels and values as they come instead (fold_held), so that what is held
// is bounded by the row group's rows and one dictionary, not by the number
// of batches. Then every leaf column's chunk is encoded in memory (levels,
// dictionary or PLAIN pages, compression, statistics: pq_write_column.c), on several
// threads when there are several leaves, while this thread writes each
// finished chunk in schema order (so that writing overlaps encoding). The
// output does not depend on the number of threads. The type mapping follows Arrow C++ (pq_write_schema.c); the
// Arrow schema is stored under "ARROW:schema" (base64 of the IPC schema
// message, as Arrow C++ does) so that Arrow readers restore the exact types.
//
// Options (sl_write_args.format_options, "key=value,key=value"):
//   compression=snappy|zstd|gzip|lz4|lz4_raw|brotli|none   (default: the
//        args->compression codec, else snappy, like pyarrow)
//   compression_level=N      codec level (codec default if absent)
//   row_group_size=ROWS      rows per row group (default 1Mi, like pyarrow)
//   page_size=BYTES          data page size target before compression (1 MiB)
//   dictionary_page_size_limit=BYTES  dictionary size before falling back to
//        PLAIN (1 MiB, as Arrow C++)
//   data_page_version=1|2    (default 1, like pyarrow)
//   dictionary=true|false    (default true)
//   write_statistics=true|false  (default true)
//   threads=N                encoding threads (default: online CPUs, max 8)
#include "format/parquet/parquet_writer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_row_filter.h"
#include "core/sl_value_text.h"
#include "format/ipc/ipc_fbs.h"
#include "format/ipc/ipc_writer.h"
#include "format/parquet/pq_write_internal.h"
#include "io/sl_sink.h"
#include "core/sl_cores.h"

#define PQW_MAX_THREADS 8
/// Held batches are folded (fold_held) when there are this many and they
/// average fewer rows than PQW_FOLD_ROWS_PER_BATCH (each costs about a KiB
/// held, more than such rows), or when their distinct dictionaries pass
/// PQW_FOLD_DICT_BYTES and outweigh their rows 64 to 1.
#define PQW_FOLD_BATCHES 1024
#define PQW_FOLD_ROWS_PER_BATCH 64
#define PQW_FOLD_DICT_BYTES (16 << 20)

/// A batch of the stream, held while row groups refer to it.
struct held_batch {
  struct ArrowArray array;
  int64_t refs;
};

struct rg_out {
  struct pqw_chunk* chunks;  ///< one per leaf
  int64_t num_rows;
  int64_t file_offset;
  int64_t total_byte_size;
  int64_t total_compressed_size;
};

struct pq_writer {
  const struct sluice_allocator* alloc;
  struct pqw_options opt;
  struct sl_sink* sink;
  struct ArrowSchema schema;
  struct pqw_schema ps;
  struct pqw_slice* slices;
  int64_t n_slices, cap_slices;
  int64_t pending_rows;      ///< the row group's, folded ones included
  struct pqw_acc* acc;       ///< per leaf: rows folded out of their batches (NULL before a fold)
  int64_t folded_rows;       ///< the row group's first rows, in acc
  int64_t held_batches;      ///< batches the slices hold
  int64_t held_dict_bytes;   ///< bytes of the distinct dictionaries they hold
  const void** last_dict;    ///< per leaf: the last batch's dictionary (sl_pqw_dict_bytes)
  struct rg_out* rgs;
  int64_t n_rgs, cap_rgs;
  struct sl_buffer* spare;   ///< per leaf: chunk byte buffers reused across row groups
  uint8_t* done;             ///< per leaf: chunk encoded (flush_row_group's)
  struct pqw_scratch scratch[PQW_MAX_THREADS];
  int n_scratch;
  int64_t num_rows;
  int64_t first_row;         ///< sl_write_args.first_row: errors name rows from it
  char* bloom_columns;       ///< -W bloom_filters: '|'-separated column names (owned)
};

/* ---- Options --------------------------------------------------------------------- */

static int parse_int(const char* key, const char* v, size_t n, int64_t lo, int64_t hi,
                     int64_t* out, struct sluice_error* error) {
  if (sl_parse_int64(v, n, lo, hi, out) == 0) return 0;
  return sl_error_set(error, EINVAL, "parquet writer: option %s wants an integer in [%lld, %lld], "
                      "not '%.*s'", key, (long long)lo, (long long)hi, (int)n, v);
}

/// A byte count option: digits with an optional k, m or g suffix.
static int parse_bytes(const char* key, const char* v, size_t n, int64_t lo, int64_t hi,
                       int64_t* out, struct sluice_error* error) {
  if (sl_parse_size(v, n, lo, hi, out) == 0) return 0;
  return sl_error_set(error, EINVAL, "parquet writer: option %s wants a size in [%lld, %lld] "
                      "bytes (k, m, g suffixes), not '%.*s'", key, (long long)lo, (long long)hi,
                      (int)n, v);
}

static int parse_bool(const char* key, const char* v, size_t n, int* out,
                      struct sluice_error* error) {
  if ((n == 4 && memcmp(v, "true", 4) == 0) || (n == 1 && v[0] == '1')) *out = 1;
  else if ((n == 5 && memcmp(v, "false", 5) == 0) || (n == 1 && v[0] == '0')) *out = 0;
  else return sl_error_set(error, EINVAL, "parquet writer: option %s wants true or false, not '%.*s'",
                           key, (int)n, v);
  return 0;
}

static int parse_options(struct pq_writer* w, const struct sl_write_args* args,
                         struct sluice_error* error) {
  struct pqw_options* o = &w->opt;
  o->codec = PQ_CODEC_SNAPPY;
  o->level = PQ_LEVEL_DEFAULT;
  o->row_group_size = 1024 * 1024;
  o->page_size = 1024 * 1024;
  o->dict_limit = 1024 * 1024;
  o->data_page_version = 1;
  o->dictionary = 1;
  o->statistics = 1;
  o->threads = sl_cores(PQW_MAX_THREADS);
  o->bloom_fpp = 0.01;
  if (args->compression != NULL)
    SL_RETURN_NOT_OK(sl_pq_codec_from_name(args->compression, &o->codec, error));
  const char* s = args->format_options;
  while (s != NULL && *s != '\0') {
    const char* end = strchr(s, ',');
    if (end == NULL) end = s + strlen(s);
    const char* eq = memchr(s, '=', (size_t)(end - s));
    size_t kn = eq != NULL ? (size_t)(eq - s) : (size_t)(end - s);
    const char* v = eq != NULL ? eq + 1 : end;
    size_t vn = (size_t)(end - v);
    int64_t x = 0;
#define KEY_IS(k) (kn == strlen(k) && memcmp(s, k, kn) == 0)
    if (kn == 0 && end == s) {
      // empty item
    } else if (eq == NULL) {
      return sl_error_set(error, EINVAL, "parquet writer: option '%.*s' wants KEY=VALUE",
                          (int)kn, s);
    } else if (KEY_IS("compression") || KEY_IS("codec")) {
      char name[32];
      if (vn >= sizeof name)
        return sl_error_set(error, EINVAL, "parquet writer: unknown compression '%.*s'", (int)vn, v);
      memcpy(name, v, vn);
      name[vn] = '\0';
      SL_RETURN_NOT_OK(sl_pq_codec_from_name(name, &o->codec, error));
      // Both ways of naming it must agree: neither silently wins.
      enum pq_codec flag;
      if (args->compression != NULL && sl_pq_codec_from_name(args->compression, &flag, NULL) == 0 &&
          flag != o->codec) {
        return sl_error_set(error, EINVAL, "parquet writer: compression '%s' and %.*s=%s "
                            "name different codecs: give one", args->compression, (int)kn, s,
                            name);
      }
    } else if (KEY_IS("compression_level") || KEY_IS("level")) {
      SL_RETURN_NOT_OK(parse_int("compression_level", v, vn, -1000000000, 1000000000, &x, error));
      o->level = (int)x;
    } else if (KEY_IS("row_group_size")) {
      SL_RETURN_NOT_OK(parse_int("row_group_size", v, vn, 1, INT64_C(1) << 40, &x, error));
      o->row_group_size = x;
    } else if (KEY_IS("page_size")) {
      SL_RETURN_NOT_OK(parse_bytes("page_size", v, vn, 1, INT64_C(1) << 30, &x, error));
      o->page_size = x;
    } else if (KEY_IS("dictionary_page_size_limit")) {
      SL_RETURN_NOT_OK(parse_bytes("dictionary_page_size_limit", v, vn, 0, INT64_C(1) << 30, &x, error));
      o->dict_limit = x;
    } else if (KEY_IS("data_page_version")) {
      if (vn == 3 && memcmp(v, "1.0", 3) == 0) x = 1;
      else if (vn == 3 && memcmp(v, "2.0", 3) == 0) x = 2;
      else SL_RETURN_NOT_OK(parse_int("data_page_version", v, vn, 1, 2, &x, error));
      o->data_page_version = (int)x;
    } else if (KEY_IS("dictionary") || KEY_IS("use_dictionary")) {
      SL_RETURN_NOT_OK(parse_bool("dictionary", v, vn, &o->dictionary, error));
    } else if (KEY_IS("write_statistics") || KEY_IS("statistics")) {
      SL_RETURN_NOT_OK(parse_bool("write_statistics", v, vn, &o->statistics, error));
    } else if (KEY_IS("bloom_filters") || KEY_IS("bloom_filter_columns")) {
      sl_free(w->alloc, w->bloom_columns, w->bloom_columns ? strlen(w->bloom_columns) + 1 : 0);
      w->bloom_columns = sl_strndup(w->alloc, v, vn);
      if (w->bloom_columns == NULL) return sl_error_set(error, ENOMEM, "parquet writer: out of memory");
    } else if (KEY_IS("bloom_filter_fpp")) {
      char text[32];
      char* stop = NULL;
      double fpp = -1;
      if (vn > 0 && vn < sizeof text) {
        memcpy(text, v, vn);
        text[vn] = '\0';
        fpp = strtod(text, &stop);
      }
      if (stop == NULL || *stop != '\0' || !(fpp > 0 && fpp < 1))
        return sl_error_set(error, EINVAL, "parquet writer: option bloom_filter_fpp wants a "
                            "number between 0 and 1 (exclusive), not '%.*s'", (int)vn, v);
      o->bloom_fpp = fpp;
    } else if (KEY_IS("threads")) {
      SL_RETURN_NOT_OK(parse_int("threads", v, vn, 1, PQW_MAX_THREADS, &x, error));
      o->threads = (int)x;
    } else {
      return sl_error_set(error, EINVAL, "unknown Parquet write option '%.*s' (known: compression, "
                          "compression_level, row_group_size, page_size, "
                          "dictionary_page_size_limit, data_page_version, dictionary, "
                          "write_statistics, bloom_filters, bloom_filter_fpp, threads)",
                          (int)kn, s);
    }
#undef KEY_IS
    s = *end ? end + 1 : end;
  }
  // A level for a codec without levels would be ignored: refused, as pyarrow
  // refuses it, so that it is not taken for a smaller file.
  if (o->level != PQ_LEVEL_DEFAULT) {
    int rc = sl_pq_codec_level(o->codec, &o->level, error);
    if (rc != 0) return sl_error_prefix(error, "parquet writer");
  }
  return 0;
}

/* ---- Row groups --------------------------------------------------------------------- */

/// The encoding of one row group's chunks by worker threads, while the
/// calling thread writes each finished chunk in order (so that writing
/// overlaps encoding).
struct rg_job {
  struct pq_writer* w;
  struct pqw_chunk* chunks;
  atomic_llong next;
  atomic_int failed;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint8_t* done;  ///< per leaf, under mu
};

struct worker {
  struct rg_job* job;
  struct pqw_scratch* scratch;
  struct sluice_error error;
  int rc;
  pthread_t thread;
  int started;
};

static void* worker_run(void* arg) {
  struct worker* k = arg;
  struct rg_job* job = k->job;
  struct pq_writer* w = job->w;
  for (;;) {
    long long i = atomic_fetch_add(&job->next, 1);
    if (i >= w->ps.n_leaves || atomic_load(&job->failed)) break;
    int rc = sl_pqw_chunk_encode(&w->ps.leaves[i], &w->opt, w->acc != NULL ? &w->acc[i] : NULL,
                                 w->slices, w->n_slices, k->scratch, &job->chunks[i], &k->error);
    pthread_mutex_lock(&job->mu);
    job->done[i] = 1;
    if (rc != 0) {
      k->rc = rc;
      atomic_store(&job->failed, 1);
    }
    pthread_cond_broadcast(&job->cv);
    pthread_mutex_unlock(&job->mu);
    if (rc != 0) break;
  }
  return NULL;
}

/// Releases the batches the slices hold (their rows are written or folded).
static void release_held(struct pq_writer* w) {
  for (int64_t i = 0; i < w->n_slices; ++i) {
    struct held_batch* hb = (struct held_batch*)(void*)w->slices[i].batch;
    if (--hb->refs == 0) {
      if (hb->array.release != NULL) hb->array.release(&hb->array);
      sl_free(w->alloc, hb, sizeof *hb);
    }
  }
  w->n_slices = 0;
  w->held_batches = 0;
  w->held_dict_bytes = 0;
  for (int64_t i = 0; w->last_dict != NULL && i < w->ps.n_leaves; ++i) w->last_dict[i] = NULL;
}

static void release_slices(struct pq_writer* w) {
  release_held(w);
  for (int64_t i = 0; w->acc != NULL && i < w->ps.n_leaves; ++i) sl_pqw_acc_free(&w->acc[i]);
  w->pending_rows = 0;
  w->folded_rows = 0;
}

/// Folds the rows of the slices into w->acc and releases their batches.
static int fold_held(struct pq_writer* w, struct sluice_error* error) {
  int64_t n_leaves = w->ps.n_leaves;
  if (w->acc == NULL) {
    w->acc = sl_calloc(w->alloc, (size_t)n_leaves, sizeof *w->acc);
    if (w->acc == NULL) return sl_error_set(error, ENOMEM, "parquet writer: out of memory");
    for (int64_t i = 0; i < n_leaves; ++i) sl_pqw_acc_init(&w->acc[i], w->alloc);
  }
  for (int64_t i = 0; i < n_leaves; ++i)
    SL_RETURN_NOT_OK(sl_pqw_acc_fold(&w->acc[i], &w->ps.leaves[i], w->slices, w->n_slices, error));
  release_held(w);
  w->folded_rows = w->pending_rows;
  return 0;
}

/// Whether the batches held cost more than folding their rows (see
/// PQW_FOLD_BATCHES).
static int fold_due(const struct pq_writer* w) {
  int64_t rows = w->pending_rows - w->folded_rows;
  return (w->held_batches >= PQW_FOLD_BATCHES &&
          rows < w->held_batches * PQW_FOLD_ROWS_PER_BATCH) ||
         (w->held_dict_bytes >= PQW_FOLD_DICT_BYTES && w->held_dict_bytes / 64 > rows);
}

static int flush_row_group(struct pq_writer* w, struct sluice_error* error) {
  int64_t n_leaves = w->ps.n_leaves;
  if (sl_grow_array(w->alloc, (void**)&w->rgs, &w->cap_rgs, w->n_rgs + 1, sizeof *w->rgs) != 0)
    return sl_error_set(error, ENOMEM, "parquet writer: out of memory (row groups)");
  struct rg_out* rg = &w->rgs[w->n_rgs];
  memset(rg, 0, sizeof *rg);
  rg->chunks = sl_calloc(w->alloc, (size_t)n_leaves, sizeof *rg->chunks);
  if (rg->chunks == NULL) return sl_error_set(error, ENOMEM, "parquet writer: out of memory");
  w->n_rgs++;
  for (int64_t i = 0; i < n_leaves; ++i) {
    sl_pqw_chunk_init(&rg->chunks[i], w->alloc);
    rg->chunks[i].bytes = w->spare[i];
    sl_buffer_init(&w->spare[i], w->alloc);
  }
  rg->num_rows = w->pending_rows;

  struct rg_job job;
  job.w = w;
  job.chunks = rg->chunks;
  job.done = w->done;
  memset(job.done, 0, (size_t)n_leaves);
  atomic_init(&job.next, 0);
  atomic_init(&job.failed, 0);
  if (pthread_mutex_init(&job.mu, NULL) != 0)
    return sl_error_set(error, EAGAIN, "parquet writer: cannot create a mutex");
  if (pthread_cond_init(&job.cv, NULL) != 0) {
    pthread_mutex_destroy(&job.mu);
    return sl_error_set(error, EAGAIN, "parquet writer: cannot create a condition variable");
  }
  struct worker workers[PQW_MAX_THREADS];
  int n_workers = w->n_scratch < n_leaves ? w->n_scratch : (int)n_leaves;
  int n_started = 0;
  for (int t = 0; t < n_workers; ++t) {
    memset(&workers[t], 0, sizeof workers[t]);
    workers[t].job = &job;
    workers[t].scratch = &w->scratch[t];
  }
  // With one encoding thread this thread encodes everything first; with
  // more, they all run beside it and it writes.
  for (int t = 0; n_workers > 1 && t < n_workers; ++t) {
    workers[t].started = pthread_create(&workers[t].thread, NULL, worker_run, &workers[t]) == 0;
    n_started += workers[t].started;
  }
  if (n_started == 0) worker_run(&workers[0]);
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < n_leaves; ++i) {
    pthread_mutex_lock(&job.mu);
    while (!job.done[i] && !atomic_load(&job.failed)) pthread_cond_wait(&job.cv, &job.mu);
    pthread_mutex_unlock(&job.mu);
    if (atomic_load(&job.failed)) break;
    {
      struct pqw_chunk* c = &rg->chunks[i];
      int64_t pos = sl_sink_position(w->sink);
      if (i == 0) rg->file_offset = pos;
      rc = sl_sink_write(w->sink, c->bytes.data, c->bytes.size, error);
      c->meta.data_page_offset += pos;
      if (c->meta.dictionary_page_offset >= 0) c->meta.dictionary_page_offset += pos;
      if (c->meta.bloom_filter_offset >= 0) c->meta.bloom_filter_offset += pos;
      rg->total_byte_size += c->meta.total_uncompressed_size;
      rg->total_compressed_size += c->meta.total_compressed_size;
      // Keep the memory for the next row group's chunk of this leaf.
      c->bytes.size = 0;
      w->spare[i] = c->bytes;
      sl_buffer_init(&c->bytes, w->alloc);
    }
  }
  // A write error stops the encoders early.
  if (rc != 0) atomic_store(&job.failed, 1);
  for (int t = 0; t < n_workers; ++t) {
    if (workers[t].started) pthread_join(workers[t].thread, NULL);
    if (rc == 0 && workers[t].rc != 0) {
      rc = workers[t].rc;
      if (error != NULL) *error = workers[t].error;
    }
  }
  pthread_cond_destroy(&job.cv);
  pthread_mutex_destroy(&job.mu);
  w->num_rows += rg->num_rows;
  release_slices(w);
  return rc;
}

/// Adds a batch: slices of it go to row groups, flushed when full.
static int add_batch(struct pq_writer* w, struct ArrowArray* batch, int copy,
                     struct sluice_error* error) {
  if (batch->n_children != w->schema.n_children) {
    int rc = sl_error_set(error, EINVAL, "parquet writer: batch has %lld columns, schema %lld",
                          (long long)batch->n_children, (long long)w->schema.n_children);
    batch->release(batch);
    return rc;
  }
  struct held_batch* hb = sl_alloc(w->alloc, sizeof *hb);
  if (hb == NULL) {
    batch->release(batch);
    return sl_error_set(error, ENOMEM, "parquet writer: out of memory");
  }
  hb->array = *batch;
  batch->release = NULL;
  hb->refs = 1;  // ours while slicing
  int rc = 0;
  int64_t off = 0;
  while (rc == 0 && off < hb->array.length) {
    // Polled per row group too: the sink polls per MiB it writes, but a row
    // group may take a few bytes (2^40 rows of a null column ignored SIGTERM
    // for minutes, a million row groups of 1Mi rows).
    if ((rc = sl_sink_cancelled(w->sink, error)) != 0) break;
    int64_t take = hb->array.length - off;
    if (take > w->opt.row_group_size - w->pending_rows) take = w->opt.row_group_size - w->pending_rows;
    if (sl_grow_array(w->alloc, (void**)&w->slices, &w->cap_slices, w->n_slices + 1,
                      sizeof *w->slices) != 0) {
      rc = sl_error_set(error, ENOMEM, "parquet writer: out of memory");
      break;
    }
    w->slices[w->n_slices].batch = &hb->array;
    w->slices[w->n_slices].row = off;
    w->slices[w->n_slices].n_rows = take;
    w->slices[w->n_slices].input_row = w->first_row + w->num_rows + w->pending_rows;
    w->n_slices++;
    hb->refs++;
    w->pending_rows += take;
    off += take;
    if (w->pending_rows >= w->opt.row_group_size) rc = flush_row_group(w, error);
  }
  // Still held by the row group being filled: its rows are copied (the
  // producer may refill the batch's memory once we ask for the next one,
  // as a loop refilling one numpy buffer does), then counted, maybe folded.
  const int held = rc == 0 && w->n_slices > 0 && w->slices[w->n_slices - 1].batch == &hb->array;
  if (held && copy) {
    struct pqw_slice* tail = &w->slices[w->n_slices - 1];
    struct ArrowArray owned;
    rc = sl_array_copy(&w->schema, &hb->array, tail->row, tail->n_rows, w->alloc, &owned, error);
    if (rc == 0) {
      hb->array.release(&hb->array);
      sl_array_move(&owned, &hb->array);
      tail->row = 0;
    }
  }
  if (rc == 0 && held) {
    w->held_batches++;
    for (int64_t i = 0; i < w->ps.n_leaves; ++i)
      w->held_dict_bytes += sl_pqw_dict_bytes(&w->ps.leaves[i], &hb->array, &w->last_dict[i]);
    if (fold_due(w)) rc = fold_held(w, error);
  }
  if (--hb->refs == 0) {
    hb->array.release(&hb->array);
    sl_free(w->alloc, hb, sizeof *hb);
  }
  return rc;
}

/* ---- Footer --------------------------------------------------------------------- */

static int base64_append(const uint8_t* p, int64_t n, struct sl_buffer* out) {
  SL_RETURN_NOT_OK(sl_buffer_reserve(out, (n + 2) / 3 * 4));
  out->size += (int64_t)sl_base64_encode(p, (size_t)n, (char*)out->data + out->size);
  return 0;
}

/// Sets the format of `field`, a node of `node`'s tree, to `format`.
static void set_format_of(struct ArrowSchema* node, const struct ArrowSchema* field,
                          const char* format) {
  if (node == field) node->format = format;  // (a static string: release frees the node's block)
  for (int64_t i = 0; i < node->n_children; ++i) set_format_of(node->children[i], field, format);
  if (node->dictionary != NULL) set_format_of(node->dictionary, field, format);
}

/// A dictionary column's index type in the stored Arrow schema holds every
/// index of the dictionary a reader builds for each of its chunks: batches
/// whose dictionaries differ (an IPC stream's replacements) make one of 200
/// values of an int8 column, which pyarrow and sluice then refused to read
/// ("Integer value 128 not in range"). Widened to int16, int32 or int64
/// where needed; the stored type is kept where it holds them.
static void widen_dictionary_indices(struct pq_writer* w) {
  for (int64_t i = 0; i < w->ps.n_leaves; ++i) {
    const struct pqw_leaf* leaf = &w->ps.leaves[i];
    if (!leaf->is_dict || leaf->dict_field == NULL) continue;
    int64_t most = 0;
    for (int64_t r = 0; r < w->n_rgs; ++r) {
      if (w->rgs[r].chunks[i].distinct_bound > most) most = w->rgs[r].chunks[i].distinct_bound;
    }
    const enum sl_type_id id = leaf->index_type.id;
    int64_t room = id == SL_TYPE_INT8 ? 128 : id == SL_TYPE_UINT8 ? 256
                   : id == SL_TYPE_INT16 ? 32768 : id == SL_TYPE_UINT16 ? 65536
                   : id == SL_TYPE_INT32 ? (INT64_C(1) << 31) : INT64_MAX;
    if (most <= room) continue;
    set_format_of(&w->schema, leaf->dict_field,
                  most <= 32768 ? "s" : most <= (INT64_C(1) << 31) ? "i" : "l");
  }
}

/// base64 of the encapsulated IPC Schema message, as Arrow C++ stores it.
static int arrow_schema_b64(struct pq_writer* w, struct sl_buffer* out,
                            struct sluice_error* error) {
  widen_dictionary_indices(w);
  struct ipc_dicts dicts;
  memset(&dicts, 0, sizeof dicts);
  struct fb_builder b;
  sl_fb_init(&b, w->alloc);
  int rc = sl_ipc_dicts_collect(&dicts, w->alloc, &w->schema, error);
  fb_ref schema = 0;
  if (rc == 0) rc = sl_ipc_build_schema(&b, &w->schema, &dicts, &schema, error);
  const uint8_t* meta = NULL;
  size_t size = 0;
  if (rc == 0) {
    sl_fb_table_start(&b);
    sl_fb_add_i16(&b, IPC_MESSAGE_VERSION, IPC_METADATA_V5);
    sl_fb_add_u8(&b, IPC_MESSAGE_HEADER_TYPE, IPC_MESSAGE_SCHEMA);
    sl_fb_add_ref(&b, IPC_MESSAGE_HEADER, schema);
    sl_fb_add_i64(&b, IPC_MESSAGE_BODY_LENGTH, 0);
    fb_ref message = sl_fb_table_end(&b);
    rc = sl_fb_finish(&b, message, &meta, &size, error);
  }
  struct sl_buffer framed;
  sl_buffer_init(&framed, w->alloc);
  if (rc == 0) {
    uint8_t prefix[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    uint32_t len = (uint32_t)size;
    memcpy(prefix + 4, &len, 4);
    if (sl_buffer_append(&framed, prefix, 8) != 0 || sl_buffer_append(&framed, meta, (int64_t)size) != 0 ||
        base64_append(framed.data, framed.size, out) != 0)
      rc = sl_error_set(error, ENOMEM, "parquet writer: out of memory (ARROW:schema)");
  }
  sl_buffer_reset(&framed);
  sl_fb_free(&b);
  sl_ipc_dicts_free(&dicts);
  return rc;
}

static int write_footer(struct pq_writer* w, struct sluice_error* error) {
  struct pq_file_meta fm;
  memset(&fm, 0, sizeof fm);
  fm.version = 2;
  fm.schema = w->ps.elements;
  fm.n_schema = w->ps.n_elements;
  fm.num_rows = w->num_rows;
  fm.alloc = w->alloc;
  static const char created_by[] = "sluice version " SLUICE_VERSION_STRING;
  fm.created_by = (struct pq_bytes){(const uint8_t*)created_by, (int64_t)strlen(created_by), 1};
  int rc = 0;
  struct sl_buffer b64, out;
  sl_buffer_init(&b64, w->alloc);
  sl_buffer_init(&out, w->alloc);
  struct pq_row_group* rgs = NULL;
  struct pq_key_value* kv = NULL;
  int64_t n_kv = 0, cap_kv = 0;
  int64_t n_leaves = w->ps.n_leaves;
  if (w->n_rgs > 0) {
    rgs = sl_calloc(w->alloc, (size_t)w->n_rgs, sizeof *rgs);
    if (rgs == NULL) rc = sl_error_set(error, ENOMEM, "parquet writer: out of memory (footer)");
  }
  for (int64_t r = 0; rc == 0 && r < w->n_rgs; ++r) {
    struct rg_out* src = &w->rgs[r];
    struct pq_row_group* g = &rgs[r];
    g->columns = sl_calloc(w->alloc, (size_t)n_leaves, sizeof *g->columns);
    if (g->columns == NULL) {
      rc = sl_error_set(error, ENOMEM, "parquet writer: out of memory (footer)");
      break;
    }
    g->n_columns = n_leaves;
    g->num_rows = src->num_rows;
    g->total_byte_size = src->total_byte_size;
    g->total_compressed_size = src->total_compressed_size;
    g->file_offset = src->file_offset;
    g->ordinal = (int32_t)(r < 32767 ? r : -1);
    for (int64_t i = 0; i < n_leaves; ++i) {
      struct pq_column_chunk* cc = &g->columns[i];
      cc->meta_data = src->chunks[i].meta;
      cc->has_meta_data = 1;
      cc->file_offset = cc->meta_data.dictionary_page_offset >= 0
                            ? cc->meta_data.dictionary_page_offset : cc->meta_data.data_page_offset;
    }
  }
  fm.row_groups = rgs;
  fm.n_row_groups = w->n_rgs;
  // Key/value metadata: the schema's own, then ARROW:schema.
  struct sl_metadata_iter it;
  sl_metadata_iter_init(&it, w->schema.metadata);
  for (int more = 1; rc == 0 && more;) {
    struct pq_key_value e;
    memset(&e, 0, sizeof e);
    const char *k, *v;
    int32_t kn, vn;
    if (sl_metadata_iter_next(&it, &k, &kn, &v, &vn)) {
      if (kn == 12 && memcmp(k, "ARROW:schema", 12) == 0) continue;
      e.key = (struct pq_bytes){(const uint8_t*)k, kn, 1};
      e.value = (struct pq_bytes){(const uint8_t*)v, vn, 1};
    } else {  // after the last: ARROW:schema
      more = 0;
      rc = arrow_schema_b64(w, &b64, error);
      if (rc != 0) break;
      e.key = (struct pq_bytes){(const uint8_t*)"ARROW:schema", 12, 1};
      e.value = (struct pq_bytes){b64.data, b64.size, 1};
    }
    if (sl_grow_array(w->alloc, (void**)&kv, &cap_kv, n_kv + 1, sizeof *kv) != 0) {
      rc = sl_error_set(error, ENOMEM, "parquet writer: out of memory (footer)");
      break;
    }
    kv[n_kv++] = e;
  }
  fm.key_value_metadata = kv;
  fm.n_key_value_metadata = n_kv;
  if (rc == 0) rc = sl_pq_file_meta_write(&fm, &out, error);
  if (rc == 0 && out.size > INT32_MAX)
    rc = sl_error_set(error, EFBIG, "parquet writer: footer of %lld bytes", (long long)out.size);
  if (rc == 0) {
    uint8_t tail[8];
    uint32_t len = (uint32_t)out.size;
    memcpy(tail, &len, 4);
    memcpy(tail + 4, "PAR1", 4);
    rc = sl_sink_write(w->sink, out.data, out.size, error);
    if (rc == 0) rc = sl_sink_write(w->sink, tail, 8, error);
  }
  for (int64_t r = 0; rgs != NULL && r < w->n_rgs; ++r) {
    if (rgs[r].columns != NULL) sl_free(w->alloc, rgs[r].columns, (size_t)n_leaves * sizeof *rgs[r].columns);
  }
  if (rgs != NULL) sl_free(w->alloc, rgs, (size_t)w->n_rgs * sizeof *rgs);
  sl_free(w->alloc, kv, (size_t)cap_kv * sizeof *kv);
  sl_buffer_reset(&b64);
  sl_buffer_reset(&out);
  return rc;
}

/* ---- Driver --------------------------------------------------------------------- */

/// Marks the leaves -W bloom_filters names: a top-level column (all its
/// leaves) or a leaf by its dotted path ("s.a"). A name that is neither is
/// an error before anything is written.
static int mark_bloom_leaves(struct pq_writer* w, struct sluice_error* error) {
  for (const char* p = w->bloom_columns; p != NULL && *p != '\0';) {
    const char* bar = strchr(p, '|');
    size_t n = bar != NULL ? (size_t)(bar - p) : strlen(p);
    int found = 0;
    for (int64_t i = 0; n > 0 && i < w->ps.n_leaves; ++i) {
      struct pqw_leaf* leaf = &w->ps.leaves[i];
      const struct pq_bytes* top = leaf->n_path > 0 ? &leaf->path[0] : NULL;
      if ((strlen(leaf->name) == n && memcmp(leaf->name, p, n) == 0) ||
          (top != NULL && (size_t)top->size == n && memcmp(top->data, p, n) == 0)) {
        leaf->bloom = 1;
        found = 1;
      }
    }
    if (n > 0 && !found)
      return sl_error_set(error, EINVAL, "parquet writer: bloom_filters names '%.*s', which is "
                          "not a column", (int)n, p);
    p = bar != NULL ? bar + 1 : p + n;
  }
  return 0;
}

static void writer_free(struct pq_writer* w) {
  if (w->bloom_columns != NULL) sl_free(w->alloc, w->bloom_columns, strlen(w->bloom_columns) + 1);
  release_slices(w);
  sl_free(w->alloc, w->slices, (size_t)w->cap_slices * sizeof *w->slices);
  if (w->acc != NULL) sl_free(w->alloc, w->acc, (size_t)w->ps.n_leaves * sizeof *w->acc);
  if (w->last_dict != NULL)
    sl_free(w->alloc, w->last_dict, (size_t)w->ps.n_leaves * sizeof *w->last_dict);
  for (int64_t r = 0; r < w->n_rgs; ++r) {
    for (int64_t i = 0; i < w->ps.n_leaves; ++i) sl_pqw_chunk_free(&w->rgs[r].chunks[i]);
    sl_free(w->alloc, w->rgs[r].chunks, (size_t)w->ps.n_leaves * sizeof *w->rgs[r].chunks);
  }
  sl_free(w->alloc, w->rgs, (size_t)w->cap_rgs * sizeof *w->rgs);
  if (w->spare != NULL) {
    for (int64_t i = 0; i < w->ps.n_leaves; ++i) sl_buffer_reset(&w->spare[i]);
    sl_free(w->alloc, w->spare, (size_t)w->ps.n_leaves * sizeof *w->spare);
  }
  if (w->done != NULL) sl_free(w->alloc, w->done, (size_t)w->ps.n_leaves);
  for (int t = 0; t < w->n_scratch; ++t) sl_pqw_scratch_free(&w->scratch[t]);
  sl_pqw_schema_free(&w->ps);
  if (w->schema.release != NULL) w->schema.release(&w->schema);
}

static void parquet_close(void* state) {
  struct pq_writer* w = state;
  if (w == NULL) return;
  const struct sluice_allocator* alloc = w->alloc;
  writer_free(w);
  sl_free(alloc, w, sizeof *w);
}

static int parquet_open(const struct ArrowSchema* schema, struct sl_sink* sink,
                        const struct sl_write_args* args, void** state,
                        struct sluice_error* error) {
  *state = NULL;
  struct pq_writer* w = sl_calloc(args->alloc, 1, sizeof *w);
  if (w == NULL) return sl_error_set(error, ENOMEM, "parquet writer: out of memory");
  w->alloc = args->alloc;
  w->sink = sink;
  w->first_row = args->first_row;
  int rc = parse_options(w, args, error);
  if (rc == 0) rc = sl_schema_copy(schema, w->alloc, &w->schema, error);
  if (rc == 0) rc = sl_pqw_schema_build(&w->ps, &w->schema, w->alloc, error);
  if (rc == 0) rc = mark_bloom_leaves(w, error);
  if (rc == 0) {
    w->spare = sl_calloc(w->alloc, (size_t)w->ps.n_leaves, sizeof *w->spare);
    w->done = sl_calloc(w->alloc, (size_t)w->ps.n_leaves, 1);
    w->last_dict = sl_calloc(w->alloc, (size_t)w->ps.n_leaves, sizeof *w->last_dict);
    if (w->spare == NULL || w->done == NULL || w->last_dict == NULL)
      rc = sl_error_set(error, ENOMEM, "parquet writer: out of memory");
    for (int64_t i = 0; rc == 0 && i < w->ps.n_leaves; ++i) sl_buffer_init(&w->spare[i], w->alloc);
  }
  int want = w->opt.threads < w->ps.n_leaves ? w->opt.threads : (int)w->ps.n_leaves;
  for (int t = 0; rc == 0 && t < want; ++t) {
    rc = sl_pqw_scratch_init(&w->scratch[t], w->alloc, error);
    w->n_scratch = t + 1;
  }
  if (rc == 0) rc = sl_sink_write(sink, "PAR1", 4, error);
  if (rc != 0) {
    parquet_close(w);
    return rc;
  }
  *state = w;
  return 0;
}

/// Frees what encoding grew (page, dictionary and chunk buffers), for a
/// writer that waits between pushes: a partitioned write may keep many.
static int trim_buffers(struct pq_writer* w, struct sluice_error* error) {
  for (int t = 0; t < w->n_scratch; ++t) {
    sl_pqw_scratch_free(&w->scratch[t]);
    SL_RETURN_NOT_OK(sl_pqw_scratch_init(&w->scratch[t], w->alloc, error));
  }
  for (int64_t i = 0; i < w->ps.n_leaves; ++i) sl_buffer_reset(&w->spare[i]);
  return 0;
}

static int parquet_push(void* state, struct ArrowArray* batch, int flags,
                        struct sluice_error* error) {
  struct pq_writer* w = state;
  int rc = 0;
  // Rows kept for the row group are copied unless it ends here or the
  // batch's memory stays as it is.
  int copy = !(flags & (SL_PUSH_END_ROW_GROUP | SL_PUSH_OWNED));
  if (batch != NULL && batch->release != NULL) {
    if (batch->length == 0) batch->release(batch);
    else rc = add_batch(w, batch, copy, error);  // takes it
  }
  if (rc == 0 && (flags & SL_PUSH_END_ROW_GROUP) && w->pending_rows > 0) {
    rc = flush_row_group(w, error);
    if (rc == 0) rc = trim_buffers(w, error);
  }
  return rc;
}

static int parquet_finish(void* state, struct sluice_error* error) {
  struct pq_writer* w = state;
  int rc = w->pending_rows > 0 ? flush_row_group(w, error) : 0;
  return rc == 0 ? write_footer(w, error) : rc;
}

static const struct sl_format_writer k_parquet_writer;

static int parquet_write(struct ArrowArrayStream* stream, struct sl_sink* sink,
                         const struct sl_write_args* args, struct sluice_error* error) {
  return sl_format_write_pushed(&k_parquet_writer, stream, sink, args, error);
}

static const char* const k_parquet_extensions[] = {".parquet", ".pq", NULL};
static const struct sl_format_writer k_parquet_writer = {
    .name = "parquet", .extensions = k_parquet_extensions, .write = parquet_write,
    .open = parquet_open, .push = parquet_push, .finish = parquet_finish, .close = parquet_close};

const struct sl_format_writer* sl_parquet_writer(void) { return &k_parquet_writer; }
