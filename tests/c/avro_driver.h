// Driver modes of test_avro (header-only, included by test_avro.c only):
// `--to-ipc IN OUT [FORMAT_OPTIONS]` converts an Avro file to an Arrow IPC
// stream through the scan engine, for the Python interop tests until the CLI
// lists the reader; `--count IN [THREADS]` scans and prints rows and seconds,
// for speed checks.
#ifndef SLUICE_TEST_AVRO_DRIVER_H
#define SLUICE_TEST_AVRO_DRIVER_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "format/avro/avro_reader.h"
#include "format/ipc/ipc_writer.h"
#include "io/sl_sink.h"
#include "io/sl_source.h"
#include "scan/sl_scan.h"

struct scan_stream {
  struct sl_scan* scan;
  struct ArrowSchema schema;
  struct sluice_error error;
};

static int ss_schema(struct ArrowArrayStream* s, struct ArrowSchema* out) {
  struct scan_stream* ss = s->private_data;
  return sl_schema_copy(&ss->schema, NULL, out, &ss->error);
}
static int ss_next(struct ArrowArrayStream* s, struct ArrowArray* out) {
  struct scan_stream* ss = s->private_data;
  return sl_scan_next(ss->scan, out, NULL, &ss->error);
}
static const char* ss_error(struct ArrowArrayStream* s) {
  return ((struct scan_stream*)s->private_data)->error.message;
}
static void ss_release(struct ArrowArrayStream* s) { s->release = NULL; }

static int to_ipc(const char* in, const char* out, const char* options) {
  struct sluice_error err = {0};
  const struct sl_format_reader* fmt = sl_avro_reader();
  struct sl_source* src = NULL;
  void* reader = NULL;
  struct scan_stream ss = {0};
  struct sl_split* splits = NULL;
  int64_t n = 0;
  struct sl_sink* sink = NULL;
  int rc = sl_source_open(in, NULL, &src, &err);
  struct sl_reader_args args = {.source = src, .format_options = options};
  if (rc == 0) rc = fmt->open(&args, &reader, &err);
  if (rc == 0) rc = fmt->schema(reader, &ss.schema, &err);
  if (rc == 0) rc = fmt->plan_splits(reader, &splits, &n, &err);
  struct sl_scan_args sa = {.format = fmt, .reader = reader, .splits = splits, .n_splits = n,
                            .schema = &ss.schema, .ordered = 1, .limit = -1, .slow_split = -1};
  if (rc == 0) rc = sl_scan_start(&sa, &ss.scan, &err);
  struct ArrowArrayStream stream = {ss_schema, ss_next, ss_error, ss_release, &ss};
  if (rc == 0) rc = sl_sink_open(out, NULL, &sink, &err);
  struct sl_write_args wa = {0};
  if (rc == 0) rc = sl_ipc_stream_writer()->write(&stream, sink, &wa, &err);
  if (rc == 0) {
    rc = sl_sink_commit(sink, &err);
  } else {
    sl_sink_abort(sink);
  }
  if (ss.scan) sl_scan_stop(ss.scan);
  if (ss.schema.release) ss.schema.release(&ss.schema);
  if (splits) sl_free(NULL, splits, (size_t)n * sizeof *splits);
  if (reader) fmt->close(reader);
  sl_source_close(src);
  if (rc != 0) fprintf(stderr, "error: %s\n", err.message);
  return rc != 0;
}

/// `--count FILE [THREADS]`: scans with the engine and prints rows and seconds
/// (the speed check against fastavro in the report uses it).
static int count_rows(const char* in, int threads) {
  struct sluice_error err = {0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  struct sl_source* src;
  const struct sl_format_reader* fmt = sl_avro_reader();
  if (sl_source_open(in, NULL, &src, &err) != 0) goto fail;
  struct sl_reader_args args = {.source = src};
  void* reader;
  if (fmt->open(&args, &reader, &err) != 0) goto fail;
  struct ArrowSchema schema;
  struct sl_split* splits;
  int64_t n;
  if (fmt->schema(reader, &schema, &err) != 0 || fmt->plan_splits(reader, &splits, &n, &err) != 0)
    goto fail;
  struct sl_scan_args sa = {.format = fmt, .reader = reader, .splits = splits, .n_splits = n,
                            .schema = &schema, .threads = threads, .ordered = 0, .limit = -1,
                            .slow_split = -1};
  struct sl_scan* scan;
  if (sl_scan_start(&sa, &scan, &err) != 0) goto fail;
  int64_t rows = 0;
  for (;;) {
    struct ArrowArray b;
    if (sl_scan_next(scan, &b, NULL, &err) != 0) goto fail;
    if (b.release == NULL) break;
    rows += b.length;
    b.release(&b);
  }
  sl_scan_stop(scan);
  schema.release(&schema);
  sl_free(NULL, splits, (size_t)n * sizeof *splits);
  fmt->close(reader);
  sl_source_close(src);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("%lld rows %lld splits %.4f s\n", (long long)rows, (long long)n,
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
  return 0;
fail:
  fprintf(stderr, "error: %s\n", err.message);
  return 1;
}

#endif
