/// @file load_arrow.c
/// W1 task (a), sluice side: "load a table into Arrow memory".
///
/// Opens a dataset with libsluice's public API, scans it to completion and
/// keeps every batch alive (as a program that loads a table would), then
/// computes the checksums bench/run.py compares against every peer:
/// rows, sum(id) (exact, int64 wrap-around like numpy), and sum of each float64
/// column and of the items of each list<float64> column (W2). Only the load
/// is inside `load_s`; the checksum pass (which touches
/// every byte of every column, so lazily mapped data is paid for somewhere)
/// is `verify_s`. Prints one JSON line on stdout.
///
/// With --stream it keeps nothing: each batch is checksummed as it arrives
/// and released, the way the avro-c and Java Avro cells read (one reused
/// record, every field summed); the checksums are then inside `load_s`.
///
/// usage: load_arrow [--threads N] [--unordered] [--budget BYTES] [--stream]
///                   [--format NAME] [--batch-size ROWS] [--columns a,b,...] PATH
#define _DEFAULT_SOURCE  // realpath beside strict C11
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice.h"

#define MAX_COLUMNS 64

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int usage(void) {
  fprintf(stderr,
          "usage: load_arrow [--threads N] [--unordered] [--budget BYTES] [--stream]\n"
          "                  [--format NAME] [--batch-size ROWS] [--columns a,b,...] PATH\n");
  return 2;
}

/// The batches of a completed scan, all alive.
struct batch_list {
  struct ArrowArray* items;
  size_t n;
  size_t capacity;
};

static int batch_list_push(struct batch_list* list, struct ArrowArray* array) {
  if (list->n == list->capacity) {
    size_t capacity = list->capacity ? list->capacity * 2 : 256;
    struct ArrowArray* items = realloc(list->items, capacity * sizeof(*items));
    if (items == NULL) return ENOMEM;
    list->items = items;
    list->capacity = capacity;
  }
  list->items[list->n++] = *array;  // move: the list now owns it
  array->release = NULL;
  return 0;
}

static void batch_list_free(struct batch_list* list) {
  for (size_t i = 0; i < list->n; i++) {
    if (list->items[i].release != NULL) list->items[i].release(&list->items[i]);
  }
  free(list->items);
}

static int is_valid(const struct ArrowArray* column, int64_t i) {
  const uint8_t* validity = (const uint8_t*)column->buffers[0];
  if (validity == NULL || column->null_count == 0) return 1;
  int64_t bit = column->offset + i;
  return (validity[bit >> 3] >> (bit & 7)) & 1;
}

/// Sum of the valid int64 values of `column` in [offset, offset + length),
/// wrapping like numpy.
static uint64_t sum_int64(const struct ArrowArray* column, int64_t offset, int64_t length) {
  const int64_t* values = (const int64_t*)column->buffers[1] + column->offset + offset;
  uint64_t s[4] = {0, 0, 0, 0};
  if (column->null_count == 0 || column->buffers[0] == NULL) {
    int64_t i = 0;
    for (; i + 4 <= length; i += 4) {
      for (int k = 0; k < 4; k++) s[k] += (uint64_t)values[i + k];
    }
    for (; i < length; i++) s[0] += (uint64_t)values[i];
  } else {
    for (int64_t i = 0; i < length; i++) {
      if (is_valid(column, offset + i)) s[0] += (uint64_t)values[i];
    }
  }
  return s[0] + s[1] + s[2] + s[3];
}

/// Sum of the valid float64 values, with 8 independent accumulators so the
/// checksum runs at memory speed rather than at one add per FP-add latency
/// (pyarrow's sum is vectorised; a naive loop would make sluice's side of the
/// benchmark pay for the harness).
static double sum_double(const struct ArrowArray* column, int64_t offset, int64_t length) {
  const double* values = (const double*)column->buffers[1] + column->offset + offset;
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (column->null_count == 0 || column->buffers[0] == NULL) {
    int64_t i = 0;
    for (; i + 8 <= length; i += 8) {
      for (int k = 0; k < 8; k++) s[k] += values[i + k];
    }
    for (; i < length; i++) s[0] += values[i];
  } else {
    for (int64_t i = 0; i < length; i++) {
      if (is_valid(column, offset + i)) s[0] += values[i];
    }
  }
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/// A dictionary<int8..int64, utf8> column (w1_cat.parquet's categorical).
static int is_string_dictionary(const struct ArrowSchema* s) {
  return strchr("csil", s->format[0]) != NULL && s->format[1] == '\0' && s->dictionary != NULL &&
         strcmp(s->dictionary->format, "u") == 0;
}

/// Key i of a dictionary column whose indices are `width` bytes wide.
static int64_t key_at(const void* keys, int width, int64_t i) {
  switch (width) {
    case 1: return ((const int8_t*)keys)[i];
    case 2: return ((const int16_t*)keys)[i];
    case 4: return ((const int32_t*)keys)[i];
    default: return ((const int64_t*)keys)[i];
  }
}

/// The sum over the valid rows of the number each row's string spells after
/// its first character ("c0042" -> 42): counts per key, then one number per
/// dictionary entry, so it costs what a value_counts costs.
static double sum_dictionary_numbers(const struct ArrowSchema* schema, const struct ArrowArray* column,
                                     int64_t offset, int64_t length) {
  const struct ArrowArray* dict = column->dictionary;
  int64_t n_dict = dict->length;
  int64_t* counts = calloc((size_t)(n_dict > 0 ? n_dict : 1), sizeof *counts);
  if (counts == NULL) return -1.0;
  int width = schema->format[0] == 'c' ? 1 : schema->format[0] == 's' ? 2 : schema->format[0] == 'i' ? 4 : 8;
  const uint8_t* keys = (const uint8_t*)column->buffers[1] + (column->offset + offset) * width;
  for (int64_t i = 0; i < length; i++) {
    int64_t k = key_at(keys, width, i);
    if (is_valid(column, offset + i) && k >= 0 && k < n_dict) counts[k]++;
  }
  const int32_t* offsets = (const int32_t*)dict->buffers[1] + dict->offset;
  const char* chars = (const char*)dict->buffers[2];
  double total = 0;
  for (int64_t k = 0; k < n_dict; k++) {
    int64_t number = 0;
    for (int32_t j = offsets[k] + 1; j < offsets[k + 1]; j++) number = number * 10 + (chars[j] - '0');
    total += (double)(number * counts[k]);
  }
  free(counts);
  return total;
}

static int is_double_list(const struct ArrowSchema* s) {
  return strcmp(s->format, "+l") == 0 && s->n_children == 1 && strcmp(s->children[0]->format, "g") == 0;
}

/// The checksums of a batch, added to *sum_id and sum_x. Columns are matched
/// by type: int64 ("l") columns add into sum_id, float64 ("g") columns,
/// list<float64> columns (the items of the batch's rows) and string
/// dictionaries (sum_dictionary_numbers) each get a sum.
static void checksum_batch(const struct ArrowSchema* schema, const struct ArrowArray* batch,
                           int64_t n_columns, uint64_t* sum_id, double* sum_x) {
  for (int64_t c = 0; c < n_columns && c < batch->n_children; c++) {
    const struct ArrowArray* column = batch->children[c];
    const char* format = schema->children[c]->format;
    if (strcmp(format, "l") == 0) {
      *sum_id += sum_int64(column, batch->offset, batch->length);
    } else if (strcmp(format, "g") == 0) {
      sum_x[c] += sum_double(column, batch->offset, batch->length);
    } else if (is_double_list(schema->children[c])) {
      const int32_t* offsets = (const int32_t*)column->buffers[1] + column->offset + batch->offset;
      sum_x[c] += sum_double(column->children[0], offsets[0], offsets[batch->length] - offsets[0]);
    } else if (is_string_dictionary(schema->children[c])) {
      sum_x[c] += sum_dictionary_numbers(schema->children[c], column, batch->offset, batch->length);
    }
  }
}

/// Bytes of `path` mapped into this process (from /proc/self/maps), -1 if
/// that cannot be read: tells the report whether the reader copied or mapped.
static int64_t mapped_bytes(const char* path) {
  char real[4096];
  if (realpath(path, real) == NULL) return -1;
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return -1;
  char line[8192];
  int64_t total = 0;
  size_t real_len = strlen(real);
  while (fgets(line, sizeof(line), maps) != NULL) {
    size_t len = strlen(line);
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == ' ')) line[--len] = '\0';
    if (len < real_len || strcmp(line + len - real_len, real) != 0) continue;
    unsigned long long lo = 0, hi = 0;
    if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && hi > lo) total += (int64_t)(hi - lo);
  }
  fclose(maps);
  return total;
}

int main(int argc, char** argv) {
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  const char* path = NULL;
  const char* column_names[MAX_COLUMNS];
  char* columns_arg = NULL;
  int stream_only = 0;

  for (int i = 1; i < argc; i++) {
    const char* arg = argv[i];
    int has_value = i + 1 < argc;
    if (strcmp(arg, "--threads") == 0 && has_value) {
      options.threads = atoi(argv[++i]);
    } else if (strcmp(arg, "--stream") == 0) {
      stream_only = 1;
    } else if (strcmp(arg, "--unordered") == 0) {
      options.ordered = 0;
    } else if (strcmp(arg, "--budget") == 0 && has_value) {
      options.memory_budget = strtoll(argv[++i], NULL, 10);
    } else if (strcmp(arg, "--format") == 0 && has_value) {
      options.format = argv[++i];
    } else if (strcmp(arg, "--batch-size") == 0 && has_value) {
      options.batch_size = strtoll(argv[++i], NULL, 10);
    } else if (strcmp(arg, "--columns") == 0 && has_value) {
      columns_arg = argv[++i];
      size_t n = 0;
      for (char* name = strtok(columns_arg, ","); name != NULL && n < MAX_COLUMNS;
           name = strtok(NULL, ",")) {
        column_names[n++] = name;
      }
      options.columns = column_names;
      options.n_columns = n;
    } else if (arg[0] == '-' && arg[1] == '-') {
      return usage();
    } else if (path == NULL) {
      path = arg;
    } else {
      return usage();
    }
  }
  if (path == NULL) return usage();

  struct sluice_error error = {0};
  struct sluice_dataset* dataset = NULL;
  struct ArrowArrayStream stream = {0};
  struct ArrowSchema schema = {0};
  struct batch_list batches = {0};
  int rc;

  double t0 = now_seconds();
  if ((rc = sluice_dataset_open(path, &options, &dataset, &error)) != 0 ||
      (rc = sluice_dataset_scan(dataset, &stream, &error)) != 0) {
    fprintf(stderr, "load_arrow: %s (code %d)\n", error.message, rc);
    if (dataset != NULL) sluice_dataset_close(dataset);
    return 1;
  }
  if ((rc = stream.get_schema(&stream, &schema)) != 0) {
    const char* msg = stream.get_last_error(&stream);
    fprintf(stderr, "load_arrow: get_schema: %s (code %d)\n", msg ? msg : "?", rc);
    return 1;
  }
  int64_t n_columns = schema.n_children;
  if (n_columns > MAX_COLUMNS) n_columns = MAX_COLUMNS;
  uint64_t sum_id = 0;  // unsigned: wraps like numpy's int64 sum, no UB
  double sum_x[MAX_COLUMNS] = {0};
  int64_t rows = 0, n_batches = 0;
  for (;;) {
    struct ArrowArray array;
    memset(&array, 0, sizeof(array));
    if ((rc = stream.get_next(&stream, &array)) != 0) {
      const char* msg = stream.get_last_error(&stream);
      fprintf(stderr, "load_arrow: get_next after %" PRId64 " rows: %s (code %d)\n", rows,
              msg ? msg : "?", rc);
      return 1;
    }
    if (array.release == NULL) break;
    rows += array.length;
    ++n_batches;
    if (stream_only) {
      checksum_batch(&schema, &array, n_columns, &sum_id, sum_x);
      array.release(&array);
    } else if (batch_list_push(&batches, &array) != 0) {
      fprintf(stderr, "load_arrow: out of memory holding batches\n");
      return 1;
    }
  }
  double t1 = now_seconds();

  // Checksums, outside the timed load (--stream: done above, inside it).
  for (size_t b = 0; b < batches.n; b++) {
    checksum_batch(&schema, &batches.items[b], n_columns, &sum_id, sum_x);
  }
  double t2 = now_seconds();

  printf("{\"tool\": \"sluice\", \"rows\": %" PRId64 ", \"batches\": %" PRId64 ", \"sum_id\": %" PRId64
         ", \"sum_x\": {",
         rows, n_batches, (int64_t)sum_id);
  int first = 1;
  for (int64_t c = 0; c < n_columns; c++) {
    if (strcmp(schema.children[c]->format, "g") != 0 && !is_double_list(schema.children[c]) &&
        !is_string_dictionary(schema.children[c]))
      continue;
    printf("%s\"%s\": %.17g", first ? "" : ", ", schema.children[c]->name, sum_x[c]);
    first = 0;
  }
  printf("}, \"load_s\": %.6f, \"verify_s\": %.6f, \"format\": \"%s\", \"mapped_bytes\": %" PRId64
         "}\n",
         t1 - t0, t2 - t1, sluice_dataset_format(dataset), mapped_bytes(path));

  batch_list_free(&batches);
  schema.release(&schema);
  stream.release(&stream);
  sluice_dataset_close(dataset);
  return 0;
}
