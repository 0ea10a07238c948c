/// @file avroc_read.c
/// W2 peer: avro-c (Debian's libavro) reads an Avro file with its generic
/// value API (avro_file_reader + avro_generic_value_new +
/// avro_file_reader_read_value), the way a C program uses avro-c, and
/// checksums every record as it goes: rows, sum of the long fields (sum_id),
/// sum of each double field and of the items of each array<double> field,
/// string bytes. avro-c has no columnar output, so there is no Arrow table:
/// decoding plus the walk over the values is `load_s` (verify_s is 0).
///
/// usage: avroc_read PATH     prints one JSON line like bench/load_arrow
#define _POSIX_C_SOURCE 200809L
#include <avro.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_FIELDS 64

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/// T for ["null", T] (how nullable columns are written), else `s`.
static avro_schema_t non_null(avro_schema_t s) {
  if (avro_typeof(s) != AVRO_UNION || avro_schema_union_size(s) != 2) return s;
  avro_schema_t a = avro_schema_union_branch(s, 0);
  return avro_typeof(a) == AVRO_NULL ? avro_schema_union_branch(s, 1) : a;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: avroc_read PATH\n");
    return 2;
  }
  double t0 = now_seconds();
  avro_file_reader_t reader;
  if (avro_file_reader(argv[1], &reader) != 0) {
    fprintf(stderr, "avroc_read: %s: %s\n", argv[1], avro_strerror());
    return 1;
  }
  avro_schema_t schema = avro_file_reader_get_writer_schema(reader);
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t record;
  if (iface == NULL || avro_generic_value_new(iface, &record) != 0) {
    fprintf(stderr, "avroc_read: %s\n", avro_strerror());
    return 1;
  }
  size_t n_fields = 0;
  avro_value_get_size(&record, &n_fields);
  if (n_fields > MAX_FIELDS) n_fields = MAX_FIELDS;
  uint64_t sum_id = 0;  // wraps like numpy's int64 sum
  double sum_x[MAX_FIELDS] = {0};
  int64_t rows = 0, string_bytes = 0;
  int rc;
  while ((rc = avro_file_reader_read_value(reader, &record)) == 0) {
    for (size_t i = 0; i < n_fields; i++) {
      avro_value_t field, branch;
      if (avro_value_get_by_index(&record, i, &field, NULL) != 0) continue;
      // ["null", T] (nullable columns): the branch's value.
      if (avro_value_get_type(&field) == AVRO_UNION) {
        if (avro_value_get_current_branch(&field, &branch) != 0) continue;
        field = branch;
      }
      switch (avro_value_get_type(&field)) {
        case AVRO_INT64: {
          int64_t v;
          avro_value_get_long(&field, &v);
          sum_id += (uint64_t)v;
          break;
        }
        case AVRO_DOUBLE: {
          double v;
          avro_value_get_double(&field, &v);
          sum_x[i] += v;
          break;
        }
        case AVRO_STRING: {
          const char* s;
          size_t n;
          avro_value_get_string(&field, &s, &n);
          string_bytes += (int64_t)n;
          break;
        }
        case AVRO_ARRAY: {
          size_t n = 0;
          avro_value_get_size(&field, &n);
          double s = 0;
          for (size_t k = 0; k < n; k++) {
            avro_value_t item, value;
            double v;
            if (avro_value_get_by_index(&field, k, &item, NULL) != 0) continue;
            if (avro_value_get_type(&item) == AVRO_UNION) {
              if (avro_value_get_current_branch(&item, &value) != 0) continue;
              item = value;
            }
            if (avro_value_get_double(&item, &v) == 0) s += v;
          }
          sum_x[i] += s;
          break;
        }
        default:
          break;
      }
    }
    rows++;
  }
  if (rc != EOF) {
    fprintf(stderr, "avroc_read: %s: row %" PRId64 ": %s\n", argv[1], rows, avro_strerror());
    return 1;
  }
  double t1 = now_seconds();
  printf("{\"tool\": \"avro-c\", \"rows\": %" PRId64 ", \"sum_id\": %" PRId64 ", \"sum_x\": {",
         rows, (int64_t)sum_id);
  int first = 1;
  for (size_t i = 0; i < n_fields; i++) {
    avro_schema_t ft = non_null(avro_schema_record_field_get_by_index(schema, (int)i));
    int is_double = avro_typeof(ft) == AVRO_DOUBLE;
    int is_list = avro_typeof(ft) == AVRO_ARRAY &&
                  avro_typeof(non_null(avro_schema_array_items(ft))) == AVRO_DOUBLE;
    if (!is_double && !is_list) continue;
    printf("%s\"%s\": %.17g", first ? "" : ", ", avro_schema_record_field_name(schema, (int)i),
           sum_x[i]);
    first = 0;
  }
  printf("}, \"string_bytes\": %" PRId64 ", \"load_s\": %.6f, \"verify_s\": 0}\n", string_bytes,
         t1 - t0);
  avro_value_decref(&record);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  avro_file_reader_close(reader);
  return 0;
}
