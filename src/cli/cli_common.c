#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/sl_array.h"
#include "core/sl_type.h"
#include "core/sl_value_text.h"
#include "format/sl_format.h"

void cli_error(const char* fmt, ...) {
  char message[2048];
  va_list args;
  va_start(args, fmt);
  vsnprintf(message, sizeof message, fmt, args);
  va_end(args);
  // One line, whatever the message carried.
  for (char* p = message; *p != '\0'; ++p) {
    if (*p == '\n' || *p == '\r') *p = ' ';
  }
  fprintf(stderr, "sluice: %s\n", message);
}

int cli_parse_count(const char* text, int64_t* out) {
  if (text == NULL || *text < '0' || *text > '9') return EINVAL;
  return sl_parse_int64(text, strlen(text), 0, INT64_MAX, out);
}

int cli_parse_bytes(const char* text, int64_t* out) {
  if (text == NULL || ((*text < '0' || *text > '9') && *text != '.')) return EINVAL;
  char* end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || end == text || !isfinite(v) || v < 0) return EINVAL;
  double scale = 1;
  switch (*end) {
    case '\0': break;
    case 'k': case 'K': scale = 1024.0; ++end; break;
    case 'm': case 'M': scale = 1024.0 * 1024; ++end; break;
    case 'g': case 'G': scale = 1024.0 * 1024 * 1024; ++end; break;
    case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; ++end; break;
    default: return EINVAL;
  }
  if (*end == 'i' && scale > 1) ++end;  // "64Mi"
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return EINVAL;
  v *= scale;
  if (v >= 9.2e18) return EINVAL;
  *out = (int64_t)v;
  return 0;
}

/// Prints what a reader noted in the schema's "sluice.warning" metadata
/// (e.g. an Avro record with an empty name, accepted), on stderr.
static void warn_from_schema(struct sluice_dataset* dataset, const char* location) {
  struct ArrowSchema schema;
  struct sluice_error error;
  if (sluice_dataset_schema(dataset, &schema, &error) != 0) return;
  int32_t n = 0;
  const char* note = sl_metadata_find(schema.metadata, "sluice.warning", &n);
  if (note != NULL) fprintf(stderr, "sluice: warning: %s: %.*s\n", location, (int)n, note);
  schema.release(&schema);
}

int cli_open(const struct cli_options* options, int n_sources, struct sluice_dataset** out) {
  struct sluice_open_options open_options;
  sluice_open_options_init(&open_options);
  open_options.format = options->format;
  open_options.columns = (const char* const*)options->columns;
  open_options.n_columns = options->n_columns;
  open_options.threads = options->threads;
  open_options.memory_budget = options->budget;
  open_options.batch_size = options->batch_rows;
  open_options.ordered = options->ordered;
  open_options.limit = options->limit;
  open_options.format_options = options->format_options;
  open_options.tls_insecure = options->insecure;
  open_options.ca_bundle = options->ca_bundle;
  open_options.timeout_s = options->timeout_s;
  open_options.hive_partitioning = !options->no_hive;
  open_options.union_by_name = options->union_by_name;
  open_options.partition_filter = options->partitions;
  open_options.filter = options->filter;
  open_options.s3 = &options->s3;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  int rc = n_sources == 1
               ? sluice_dataset_open(options->positional[0], &open_options, out, &error)
               : sluice_dataset_open_many(options->positional, (size_t)n_sources, &open_options,
                                          out, &error);
  if (rc != 0) {
    cli_error("%s", error.message[0] != '\0' ? error.message : strerror(rc));
    return CLI_ERROR;
  }
  if (!options->quiet) warn_from_schema(*out, options->positional[0]);
  return CLI_OK;
}

// (The registry's lookups: they take its other names, `feather` and `ipc`, too.)
int cli_writer_known(const char* name) { return sl_format_writer_find(name) != NULL; }
int cli_reader_known(const char* name) { return sl_format_reader_find(name) != NULL; }

const char* cli_writer_list(char* out, size_t cap) {
  size_t used = 0;
  out[0] = '\0';
  for (const char* const* n = sluice_writer_formats(); n != NULL && *n != NULL; ++n) {
    int k = snprintf(out + used, cap - used, "%s%s", used > 0 ? ", " : "", *n);
    if (k < 0 || (size_t)k >= cap - used) break;
    used += (size_t)k;
  }
  return out;
}

/* ---- Progress -------------------------------------------------------------- */

struct progress_stream {
  struct sluice_dataset* dataset;
  struct sluice_scanner* scanner;
  struct sluice_error error;
  int enabled;          ///< stderr is a terminal and not --quiet
  int drawn;            ///< something is on the line to clear
  int64_t n_splits;
  int64_t max_split;    ///< highest split seen so far
  int64_t rows;
  double start, last_draw;
  struct sluice_batch_tag last_tag;  ///< of the batch get_next returned last
  int tag_positions;                 ///< cli_progress_batch_metadata adds sluice:split/batch
  char* metadata;                    ///< cli_progress_batch_metadata's blob (malloc'd)
  size_t metadata_cap;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress_clear(struct progress_stream* p) {
  if (p->drawn) {
    fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = 0;
  }
}

static void progress_draw(struct progress_stream* p) {
  double t = now_seconds();
  // Quick jobs draw nothing; long ones redraw at most ten times a second.
  if (t - p->start < 1.0 || t - p->last_draw < 0.1) return;
  p->last_draw = t;
  double fraction = p->n_splits > 0 ? (double)(p->max_split + 1) / (double)p->n_splits : 0;
  if (fraction > 1) fraction = 1;
  char bar[31];
  int filled = (int)(fraction * 30);
  for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
  bar[30] = '\0';
  fprintf(stderr, "\r\033[K[%s] %3d%%  %lld rows  %.1fs", bar, (int)(fraction * 100),
          (long long)p->rows, t - p->start);
  fflush(stderr);
  p->drawn = 1;
}

static int progress_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  struct progress_stream* p = stream->private_data;
  return sluice_dataset_schema(p->dataset, out, &p->error);
}

static int progress_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  struct progress_stream* p = stream->private_data;
  struct sluice_batch_tag tag = {0, 0, NULL};
  int rc = sluice_scanner_next(p->scanner, out, &tag, &p->error);
  if (rc != 0 || out->release == NULL) {
    progress_clear(p);
    return rc;
  }
  p->rows += out->length;
  p->last_tag = tag;
  if (tag.split > p->max_split) p->max_split = tag.split;
  if (p->enabled) progress_draw(p);
  return 0;
}

/// Appends an int32 length and the bytes of `s` (the metadata layout).
static size_t put_metadata_string(char* out, size_t at, const char* s) {
  int32_t n = (int32_t)strlen(s);
  memcpy(out + at, &n, 4);
  memcpy(out + at + 4, s, (size_t)n);
  return at + 4 + (size_t)n;
}

int cli_progress_batch_metadata(void* progress_stream, const struct ArrowArray* batch,
                                const char** metadata) {
  (void)batch;
  struct progress_stream* p = progress_stream;
  const char* in = p->last_tag.metadata;
  int32_t in_count = 0;  // the source's pairs
  if (in != NULL) memcpy(&in_count, in, 4);
  if (in_count < 0) in_count = 0;
  size_t in_size = in_count > 0 ? (size_t)sl_metadata_size(in) : 0;
  // The source's pairs but its position tags, which told where its batches
  // were in another run (a reader restoring order would believe them), then
  // this run's position when tagging: 2 * (4 + 12 + 4 + 20) bytes more.
  size_t need = (in_size > 0 ? in_size : 4) + 80;
  if (need > p->metadata_cap) {
    char* grown = realloc(p->metadata, need);
    if (grown == NULL) return ENOMEM;
    p->metadata = grown;
    p->metadata_cap = need;
  }
  size_t at = 4;
  int32_t count = 0;
  struct sl_metadata_iter it;
  sl_metadata_iter_init(&it, in_count > 0 ? in : NULL);
  const char *key, *value;
  int32_t key_len, value_len;
  while (sl_metadata_iter_next(&it, &key, &key_len, &value, &value_len)) {
    if (key_len == 12 && (memcmp(key, "sluice:split", 12) == 0 ||
                          memcmp(key, "sluice:batch", 12) == 0)) {
      continue;
    }
    memcpy(p->metadata + at, &key_len, 4);
    memcpy(p->metadata + at + 4, key, (size_t)key_len);
    at += 4 + (size_t)key_len;
    memcpy(p->metadata + at, &value_len, 4);
    memcpy(p->metadata + at + 4, value, (size_t)value_len);
    at += 4 + (size_t)value_len;
    ++count;
  }
  if (p->tag_positions) {
    char split[24], index[24];
    snprintf(split, sizeof split, "%lld", (long long)p->last_tag.split);
    snprintf(index, sizeof index, "%lld", (long long)p->last_tag.batch);
    at = put_metadata_string(p->metadata, at, "sluice:split");
    at = put_metadata_string(p->metadata, at, split);
    at = put_metadata_string(p->metadata, at, "sluice:batch");
    put_metadata_string(p->metadata, at, index);
    count += 2;
  }
  memcpy(p->metadata, &count, 4);
  *metadata = count > 0 ? p->metadata : NULL;
  return 0;
}

void cli_report_skipped(struct sluice_dataset* dataset, const struct cli_options* options) {
  char first[256];
  int64_t n = sluice_dataset_rows_skipped(dataset, first, sizeof first);
  if (n > 0 && !options->quiet)
    fprintf(stderr, "sluice: warning: skipped %lld bad row%s (first: %s)\n", (long long)n,
            n == 1 ? "" : "s", first);
}

static const char* progress_last_error(struct ArrowArrayStream* stream) {
  struct progress_stream* p = stream->private_data;
  return p->error.message;
}

static void progress_release(struct ArrowArrayStream* stream) {
  struct progress_stream* p = stream->private_data;
  if (p != NULL) {
    progress_clear(p);
    sluice_scanner_close(p->scanner);
    free(p->metadata);
    free(p);
  }
  stream->release = NULL;
}

int cli_progress_stream(struct sluice_dataset* dataset, const struct cli_options* options,
                        struct ArrowArrayStream* out, struct sluice_error* error) {
  struct progress_stream* p = calloc(1, sizeof *p);
  if (p == NULL) {
    error->code = ENOMEM;
    snprintf(error->message, sizeof error->message, "out of memory");
    return ENOMEM;
  }
  int rc = sluice_scanner_open(dataset, &p->scanner, error);
  if (rc != 0) {
    free(p);
    return rc;
  }
  p->dataset = dataset;
  p->tag_positions = !options->ordered;
  p->enabled = !options->quiet && isatty(STDERR_FILENO);
  p->n_splits = sluice_dataset_num_splits(dataset);
  p->max_split = -1;
  p->start = now_seconds();
  p->last_draw = 0;
  out->get_schema = progress_get_schema;
  out->get_next = progress_get_next;
  out->get_last_error = progress_last_error;
  out->release = progress_release;
  out->private_data = p;
  return 0;
}

/* ---- Type names ------------------------------------------------------------ */

struct name_out {
  char* data;
  size_t cap, len;
};

static void name_put(struct name_out* o, const char* s) {
  for (; *s != '\0'; ++s) {
    if (o->len + 1 < o->cap) o->data[o->len++] = *s;
  }
  o->data[o->len < o->cap ? o->len : o->cap - 1] = '\0';
}

static void type_name_rec(const struct ArrowSchema* schema, struct name_out* o, int depth) {
  struct sl_type type;
  struct sluice_error error;
  if (depth > 16) {
    name_put(o, schema->format);
    return;
  }
  // Types a reader describes but cannot read (an Arrow IPC file's run-end
  // encoded and list-view columns), named as pyarrow does.
  int ree = strcmp(schema->format, "+r") == 0;
  if ((ree && schema->n_children == 2) ||
      ((strcmp(schema->format, "+vl") == 0 || strcmp(schema->format, "+vL") == 0) &&
       schema->n_children == 1)) {
    name_put(o, ree ? "run_end_encoded<run_ends: " : schema->format[2] == 'l' ? "list_view<"
                                                                               : "large_list_view<");
    type_name_rec(schema->children[0], o, depth + 1);
    if (ree) {
      name_put(o, ", values: ");
      type_name_rec(schema->children[1], o, depth + 1);
    }
    name_put(o, ">");
    return;
  }
  if (strcmp(schema->format, "vu") == 0 || strcmp(schema->format, "vz") == 0) {
    name_put(o, schema->format[1] == 'u' ? "string_view" : "binary_view");  // inside those
    return;
  }
  if (sl_type_parse(schema->format, &type, &error) != 0) {
    name_put(o, schema->format);
    return;
  }
  if (schema->dictionary != NULL) {
    name_put(o, "dictionary<");
    type_name_rec(schema->dictionary, o, depth + 1);
    name_put(o, ", ");
  }
  char leaf[128];
  switch (type.id) {
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST:
      name_put(o, type.id == SL_TYPE_LIST ? "list<"
                  : type.id == SL_TYPE_LARGE_LIST ? "large_list<" : "fixed_size_list<");
      if (schema->n_children > 0) type_name_rec(schema->children[0], o, depth + 1);
      if (type.id == SL_TYPE_FIXED_SIZE_LIST) {
        snprintf(leaf, sizeof leaf, ", %d", (int)type.list_size);
        name_put(o, leaf);
      }
      name_put(o, ">");
      break;
    case SL_TYPE_MAP:
      name_put(o, "map<");
      if (schema->n_children > 0 && schema->children[0]->n_children == 2) {
        type_name_rec(schema->children[0]->children[0], o, depth + 1);
        name_put(o, ", ");
        type_name_rec(schema->children[0]->children[1], o, depth + 1);
      }
      name_put(o, ">");
      break;
    case SL_TYPE_STRUCT: case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION:
      name_put(o, type.id == SL_TYPE_STRUCT ? "struct<"
                  : type.id == SL_TYPE_DENSE_UNION ? "dense_union<" : "sparse_union<");
      for (int64_t i = 0; i < schema->n_children; ++i) {
        if (i > 0) name_put(o, ", ");
        name_put(o, schema->children[i]->name != NULL ? schema->children[i]->name : "");
        name_put(o, ": ");
        type_name_rec(schema->children[i], o, depth + 1);
      }
      name_put(o, ">");
      break;
    default:
      sl_type_name(&type, leaf, sizeof leaf);
      name_put(o, leaf);
      break;
  }
  if (schema->dictionary != NULL) name_put(o, ">");
}

void cli_type_name(const struct ArrowSchema* schema, char* out, size_t cap) {
  if (cap == 0) return;
  struct name_out o = {out, cap, 0};
  out[0] = '\0';
  type_name_rec(schema, &o, 0);
}

int cli_open_stream(const struct cli_options* options, int n_sources,
                    struct sluice_dataset** dataset, struct ArrowArrayStream* stream) {
  memset(stream, 0, sizeof *stream);
  int status = cli_open(options, n_sources, dataset);
  if (status != CLI_OK) return status;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  if (cli_progress_stream(*dataset, options, stream, &error) != 0) {
    cli_error("%s", error.message);
    sluice_dataset_close(*dataset);
    *dataset = NULL;
    return CLI_ERROR;
  }
  return CLI_OK;
}

int cli_read_again(struct sluice_dataset* dataset, const struct cli_options* options,
                      struct ArrowArrayStream* stream, struct sluice_error* why) {
  stream->release(stream);  // the dataset refines only with no scan open
  struct sluice_error refine_error;
  memset(&refine_error, 0, sizeof refine_error);
  int changed = 0;
  int rc = sluice_dataset_refine(dataset, &changed, &refine_error);
  if (rc != 0 && changed) {  // widened, but unusable so (a filter the new type refuses)
    *why = refine_error;
    return 0;
  }
  if (rc != 0 || !changed || cli_progress_stream(dataset, options, stream, &refine_error) != 0) {
    return 0;
  }
  if (!options->quiet) fprintf(stderr, "sluice: note: %s; reading again\n", why->message);
  return 1;
}

/// A device, FIFO or socket (-o /dev/stdout to a pipe) is written in place,
/// as it goes: what reached it cannot be taken back. /dev/null keeps
/// nothing, so writing it again is harmless (a timing run's sink).
static int written_in_place(const char* location) {
  struct stat st, null;
  if (strcmp(location, "-") == 0) return 1;
  if (stat(location, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return 0;
  return !(S_ISCHR(st.st_mode) && stat("/dev/null", &null) == 0 && st.st_rdev == null.st_rdev);
}

/// After an Avro enum column met a value its symbols lack (EDOM, sluice.h):
/// *stream a new scan from the start and `strings` the write options with
/// enums=false, unless the options name enums already; 1 when so (with a
/// note on stderr).
static int write_again_as_strings(struct sluice_dataset* dataset, const struct cli_options* options,
                                  struct ArrowArrayStream* stream, const struct sluice_error* why,
                                  char* strings, size_t cap) {
  const char* given = options->write_options != NULL ? options->write_options : "";
  if (why->code != EDOM || strstr(given, "enums") != NULL) return 0;
  int n = snprintf(strings, cap, "%s%senums=false", given, given[0] != '\0' ? "," : "");
  if (n < 0 || (size_t)n >= cap) return 0;
  stream->release(stream);
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  if (cli_progress_stream(dataset, options, stream, &error) != 0) return 0;
  return 1;
}

int cli_write_read_stream(struct sluice_dataset* dataset, struct ArrowArrayStream* stream,
                          const char* location, const struct cli_options* options) {
  struct cli_options retry = *options;  // (-W enums=false added after an enum miss)
  char strings[4096];
  struct sluice_error enum_miss;  // what made it write the strings, if anything
  memset(&enum_miss, 0, sizeof enum_miss);
  for (;;) {
    struct sluice_error error;
    memset(&error, 0, sizeof error);
    int status = cli_write_stream(stream, location, &retry, &error);
    // Standard output cannot be taken back; files and tables can be written
    // again (a failed write leaves nothing behind).
    if (status != CLI_OK && !written_in_place(location) &&
        write_again_as_strings(dataset, &retry, stream, &error, strings, sizeof strings)) {
      retry.write_options = strings;
      enum_miss = error;
      continue;
    }
    if (status != CLI_OK && enum_miss.code != 0 && error.code != EDOM) {
      // The input could not be read again (a stream is scanned once): the
      // enum's miss is the error to tell.
      cli_error("%s (reading the input again as strings failed: %s)", enum_miss.message,
                error.message);
      return status;
    }
    if (status == CLI_OK && enum_miss.code != 0 && !options->quiet) {
      fprintf(stderr, "sluice: note: %s; written with the column as strings (-W enums=false)\n",
              enum_miss.message);
    }
    if (status == CLI_OK || written_in_place(location) ||
        !cli_read_again(dataset, &retry, stream, &error)) {
      if (status != CLI_OK) cli_error("%s", error.message);
      return status;
    }
  }
}

int cli_close_stream(struct sluice_dataset* dataset, struct ArrowArrayStream* stream,
                     const struct cli_options* options, int status) {
  // The scan's workers stop first: the count they add to is then final.
  if (stream->release != NULL) stream->release(stream);
  if (status == CLI_OK) cli_report_skipped(dataset, options);
  sluice_dataset_close(dataset);
  return status;
}
