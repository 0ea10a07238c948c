// The format registry: which readers and writers are linked in, and how a
// location picks one (magic bytes first, then the extension).
#include "sl_format.h"

#include <errno.h>
#include <string.h>

#include "avro/avro_reader.h"
#include "avro/avro_writer.h"
#include "cql/cql_reader.h"
#include "cql/cql_writer.h"
#include "csv/csv_reader.h"
#include "ipc/ipc_reader.h"
#include "ipc/ipc_writer.h"
#include "parquet/parquet_reader.h"
#include "lenprefix/lenprefix_reader.h"
#include "parquet/parquet_writer.h"
#include "text/text_writers.h"
#include "../core/sl_error.h"
#include "../io/sl_compression.h"
#include "../io/sl_source_file.h"
#include "../io/sl_source_inflate.h"

typedef const struct sl_format_reader* (*sl_reader_accessor)(void);
typedef const struct sl_format_writer* (*sl_writer_accessor)(void);

// Each table ends with NULL (C has no empty arrays, and a format may be
// unlinked while it is being written). Names below must follow the same order.
static const sl_reader_accessor sl_reader_table[] = {
    sl_ipc_file_reader,
    sl_ipc_stream_reader,
    sl_csv_reader,
    sl_avro_reader,
    sl_parquet_reader,
    sl_lenprefix_reader,
    sl_cql_reader,
    NULL,
};
static const char* const sl_reader_name_table[] = {
    "arrow",
    "arrows",
    "csv",
    "avro",
    "parquet",
    "lenprefix",
    "cql",
    NULL,
};

static const sl_writer_accessor sl_writer_table[] = {
    sl_ipc_file_writer,
    sl_ipc_stream_writer,
    sl_csv_writer,
    sl_jsonl_writer,
    sl_avro_writer,
    sl_parquet_writer,
    sl_cql_writer,
    NULL,
};
static const char* const sl_writer_name_table[] = {
    "arrow",
    "arrows",
    "csv",
    "jsonl",
    "avro",
    "parquet",
    "cql",
    NULL,
};

const struct sl_format_reader* sl_format_reader_at(size_t i) {
  size_t seen = 0;
  for (const sl_reader_accessor* a = sl_reader_table; *a != NULL; ++a) {
    const struct sl_format_reader* r = (*a)();
    if (r == NULL) continue;
    if (seen++ == i) return r;
  }
  return NULL;
}

const struct sl_format_writer* sl_format_writer_at(size_t i) {
  size_t seen = 0;
  for (const sl_writer_accessor* a = sl_writer_table; *a != NULL; ++a) {
    const struct sl_format_writer* w = (*a)();
    if (w == NULL) continue;
    if (seen++ == i) return w;
  }
  return NULL;
}

const char* const* sl_format_reader_names(void) { return sl_reader_name_table; }
const char* const* sl_format_writer_names(void) { return sl_writer_name_table; }

/// Other names of a format, as peers spell them: pyarrow's Feather (v2)
/// and polars' `ipc` are the Arrow IPC file format (`.feather` and `.ipc`
/// name its files too).
static const char* canonical_name(const char* name) {
  if (name != NULL && (strcmp(name, "feather") == 0 || strcmp(name, "ipc") == 0)) return "arrow";
  return name;
}

const struct sl_format_reader* sl_format_reader_find(const char* name) {
  name = canonical_name(name);
  if (name == NULL) return NULL;
  const struct sl_format_reader* r;
  for (size_t i = 0; (r = sl_format_reader_at(i)) != NULL; ++i) {
    if (strcmp(r->name, name) == 0) return r;
  }
  return NULL;
}

const struct sl_format_writer* sl_format_writer_find(const char* name) {
  name = canonical_name(name);
  if (name == NULL) return NULL;
  const struct sl_format_writer* w;
  for (size_t i = 0; (w = sl_format_writer_at(i)) != NULL; ++i) {
    if (strcmp(w->name, name) == 0) return w;
  }
  return NULL;
}

/// Length of `location` once a compression suffix is looked through
/// ("x.csv.gz" is a CSV file), and an http(s) URL's query/fragment dropped.
static size_t logical_length(const char* location) {
  return sl_location_name_length(location) - sl_compression_suffix_length(location);
}

static int matches_extension(const char* const* extensions, const char* location, size_t len) {
  if (extensions == NULL) return 0;
  for (const char* const* e = extensions; *e != NULL; ++e) {
    if (sl_name_ends_with(location, len, *e)) return 1;
  }
  return 0;
}

const struct sl_format_reader* sl_format_reader_detect(const char* location,
                                                       const uint8_t* head, int64_t n) {
  const struct sl_format_reader* best = NULL;
  int best_score = 0;
  const struct sl_format_reader* r;
  if (head != NULL && n > 0) {
    for (size_t i = 0; (r = sl_format_reader_at(i)) != NULL; ++i) {
      int score = r->probe != NULL ? r->probe(head, n) : 0;
      if (score > best_score) {
        best = r;
        best_score = score;
      }
    }
  }
  // Magic bytes are proof; a weaker guess (e.g. "looks like text") loses to
  // what the file is called, also when that names a format sluice cannot
  // read (JSON Lines read as CSV gave wrong rows without an error).
  if (best_score >= 100) return best;
  if (sl_format_write_only(location) != NULL) return NULL;
  if (location != NULL) {
    size_t len = logical_length(location);
    for (size_t i = 0; (r = sl_format_reader_at(i)) != NULL; ++i) {
      if (matches_extension(r->extensions, location, len)) return r;
    }
  }
  return best;
}

const struct sl_format_writer* sl_format_write_only(const char* location) {
  if (location == NULL) return NULL;
  size_t len = logical_length(location);
  const struct sl_format_writer* w;
  for (size_t i = 0; (w = sl_format_writer_at(i)) != NULL; ++i) {
    if (matches_extension(w->extensions, location, len) && sl_format_reader_find(w->name) == NULL) {
      return w;
    }
  }
  return NULL;
}

const struct sl_format_writer* sl_format_writer_for_path(const char* location) {
  if (location == NULL) return NULL;
  if (strncmp(location, "cql://", 6) == 0) return sl_format_writer_find("cql");
  size_t full = strlen(location);
  if (full > 1 && location[full - 1] == '/' && !sl_location_is_http(location)) {
    // A directory named by its format (out.parquet/, the partitioned
    // writer's output): its name without the slashes tells it.
    char name[4096];
    while (full > 1 && location[full - 1] == '/') --full;
    if (full >= sizeof name) return NULL;
    memcpy(name, location, full);
    name[full] = '\0';
    return sl_format_writer_for_path(name);
  }
  // ".gz" / ".zst" are looked through only for writers that compress the
  // whole file (x.csv.gz): plain bytes under such a name would mislead
  // every reader.
  size_t len = sl_location_name_length(location);
  size_t logical = logical_length(location);
  int compressed = sl_compression_for_name(location) != SL_COMPRESS_NONE;
  const struct sl_format_writer* w;
  for (size_t i = 0; (w = sl_format_writer_at(i)) != NULL; ++i) {
    if (matches_extension(w->extensions, location, len)) return w;
    if (compressed && w->compressible && matches_extension(w->extensions, location, logical)) {
      return w;
    }
  }
  return NULL;
}

int sl_format_open_spooling(const struct sl_format_reader* format, struct sl_reader_args* args,
                            void** reader, struct sluice_error* error) {
  int rc = format->open(args, reader, error);
  if (rc != 0) *reader = NULL;
  if (rc != ENOTSUP || args->source == NULL || !sl_source_untouched(args->source)) return rc;
  struct sl_source* spooled = NULL;
  rc = sl_source_spool(args->source, &spooled, error);
  if (rc != 0) return rc;
  sl_source_close(args->source);
  args->source = spooled;
  rc = format->open(args, reader, error);
  if (rc != 0) *reader = NULL;
  return rc;
}

int sl_format_refuse_compressed(const struct sl_format_reader* format, struct sl_source* source,
                                const char* object, struct sluice_error* error) {
  if (format->inflates || object == NULL || sl_compression_suffix_length(object) == 0) return 0;
  enum sl_compression kind;
  const char* unread;
  SL_RETURN_NOT_OK(sl_source_compression(source, &kind, &unread, error));
  if (kind == SL_COMPRESS_NONE && unread == NULL) return 0;  // plain bytes, whatever the name
  return sl_error_set(error, ENOTSUP, "%s: compressed %s input (%s) is not read; decompress it "
                      "first", source->name, format->name,
                      unread != NULL ? unread : sl_compression_name(kind));
}
