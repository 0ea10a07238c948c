// Flattened Parquet schema -> tree of Arrow fields, following LogicalTypes.md
// (including its backward-compatibility rules for LIST and MAP) the way
// Arrow C++ (parquet/arrow/schema.cc) applies them, so that types match
// pyarrow.parquet.read_table.
#include "pq_schema.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_utf8.h"
#include "core/sl_value_text.h"

struct schema_ctx {
  const struct pq_file_meta* meta;
  const struct sluice_allocator* alloc;
  const char* name;
  int64_t next;      ///< next schema element to consume
  int64_t n_leaves;  ///< leaves seen so far
  struct sluice_error* error;
};

static int oom(struct schema_ctx* c) {
  return sl_error_set(c->error, ENOMEM, "%s: out of memory", c->name);
}

static int bad(struct schema_ctx* c, int64_t el, const char* why) {
  const struct pq_bytes* n = &c->meta->schema[el].name;
  return sl_error_set(c->error, EILSEQ, "%s: schema element %" PRId64 " ('%.*s'): %s", c->name,
                      el, (int)(n->size > 200 ? 200 : n->size), n->data ? (const char*)n->data : "",
                      why);
}

static void field_release(struct pq_field* f, const struct sluice_allocator* alloc) {
  for (int64_t i = 0; i < f->n_children; ++i) field_release(&f->children[i], alloc);
  if (f->children) sl_free(alloc, f->children, (size_t)f->n_children * sizeof *f->children);
  if (f->name) sl_free(alloc, f->name, strlen(f->name) + 1);
  if (f->path) sl_free(alloc, f->path, strlen(f->path) + 1);
  if (f->metadata) sl_free(alloc, f->metadata, (size_t)f->metadata_size);
  memset(f, 0, sizeof *f);
}

static int set_name(struct schema_ctx* c, struct pq_field* f, const struct pq_bytes* name) {
  if (name->data != NULL && memchr(name->data, '\0', (size_t)name->size) != NULL) {
    // Arrow's C interface ends a name at its first NUL: 'a\0b' and 'a\0c'
    // were both read as 'a' (pyarrow keeps them whole).
    char shown[160];
    return sl_error_set(c->error, EILSEQ, "%s: column name '%s' holds a NUL byte, which a column "
                        "name cannot hold (Arrow's C interface ends a name there)", c->name,
                        sl_escaped((const char*)name->data, (size_t)name->size, '\'', shown,
                                   sizeof shown));
  }
  int64_t bad_at = name->data != NULL ? sl_utf8_invalid_at(name->data, name->size) : -1;
  if (bad_at >= 0) {
    // Names are UTF-8 (Parquet's strings and Arrow's names): pyarrow's
    // Python side cannot open such a file, nor any written from it.
    char shown[160];
    return sl_error_set(c->error, EILSEQ, "%s: column name '%s' is not valid UTF-8 (at byte %"
                        PRId64 ")", c->name,
                        sl_escaped((const char*)name->data, (size_t)name->size, '\'', shown,
                                   sizeof shown), bad_at);
  }
  f->name = sl_strndup(c->alloc, name->data ? (const char*)name->data : "", (size_t)name->size);
  return f->name ? 0 : oom(c);
}

/* ---- leaf types ------------------------------------------------------------ */

static int phys_width(const struct pq_schema_element* e) {
  switch (e->type) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32: case PQ_FLOAT: return 4;
    case PQ_INT64: case PQ_DOUBLE: return 8;
    case PQ_INT96: return 12;
    case PQ_FIXED_LEN_BYTE_ARRAY: return e->type_length;
    default: return 0;
  }
}

static void set_decimal(struct pq_field* f, int32_t precision, int32_t scale, enum pq_conv conv) {
  int wide = precision > 38;
  snprintf(f->format, sizeof f->format, wide ? "d:%d,%d,256" : "d:%d,%d", (int)precision,
           (int)scale);
  f->out_width = wide ? 32 : 16;
  f->conv = conv;
}

/// Type from the physical type alone.
static void physical_type(struct pq_field* f, const struct pq_schema_element* e) {
  f->out_width = phys_width(e);
  f->conv = PQ_CONV_COPY;
  switch (e->type) {
    case PQ_BOOLEAN: strcpy(f->format, "b"); f->conv = PQ_CONV_BOOL; f->out_width = 0; break;
    case PQ_INT32: strcpy(f->format, "i"); break;
    case PQ_INT64: strcpy(f->format, "l"); break;
    case PQ_INT96:
      strcpy(f->format, "tsn:");
      f->conv = PQ_CONV_INT96;
      f->out_width = 8;
      f->int96_unit_ns = 1;
      break;
    case PQ_FLOAT: strcpy(f->format, "f"); break;
    case PQ_DOUBLE: strcpy(f->format, "g"); break;
    case PQ_BYTE_ARRAY: strcpy(f->format, "z"); f->conv = PQ_CONV_BINARY; f->out_width = 0; break;
    case PQ_FIXED_LEN_BYTE_ARRAY: snprintf(f->format, sizeof f->format, "w:%d", (int)e->type_length); break;
  }
}

static int integer_type(struct pq_field* f, const struct pq_schema_element* e, int bits,
                        int is_signed) {
  static const char k_signed[] = {'c', 's', 'i', 'l'};
  static const char k_unsigned[] = {'C', 'S', 'I', 'L'};
  int k = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : bits == 64 ? 3 : -1;
  if (k < 0) return 0;
  if (e->type == PQ_INT32 && k <= 2) {
    f->format[0] = is_signed ? k_signed[k] : k_unsigned[k];
    f->format[1] = '\0';
    f->conv = k == 0 ? PQ_CONV_I32_TO_I8 : k == 1 ? PQ_CONV_I32_TO_I16 : PQ_CONV_COPY;
    f->out_width = k == 0 ? 1 : k == 1 ? 2 : 4;
    return 1;
  }
  if (e->type == PQ_INT64 && k == 3) {
    f->format[0] = is_signed ? 'l' : 'L';
    f->format[1] = '\0';
    f->conv = PQ_CONV_COPY;
    f->out_width = 8;
    return 1;
  }
  return 0;
}

static int decimal_type(struct pq_field* f, const struct pq_schema_element* e, int32_t precision,
                        int32_t scale) {
  if (precision <= 0 || scale < 0 || scale > precision) return 0;
  switch (e->type) {
    case PQ_INT32: set_decimal(f, precision, scale, PQ_CONV_DEC_I32); return 1;
    case PQ_INT64: set_decimal(f, precision, scale, PQ_CONV_DEC_I64); return 1;
    case PQ_FIXED_LEN_BYTE_ARRAY:
      if (e->type_length < 1 || e->type_length > 32) return 0;
      set_decimal(f, precision, scale, PQ_CONV_DEC_BE);
      return e->type_length <= f->out_width;
    case PQ_BYTE_ARRAY: set_decimal(f, precision, scale, PQ_CONV_DEC_BE); return 1;
    default: return 0;
  }
}

static int time_type(struct pq_field* f, const struct pq_schema_element* e, enum pq_time_unit u,
                     int timestamp, int utc) {
  char unit = u == PQ_MILLIS ? 'm' : u == PQ_MICROS ? 'u' : u == PQ_NANOS ? 'n' : 0;
  if (unit == 0) return 0;
  if (timestamp) {
    if (e->type != PQ_INT64) return 0;
    snprintf(f->format, sizeof f->format, "ts%c:%s", unit, utc ? "UTC" : "");
    f->out_width = 8;
  } else {
    if ((u == PQ_MILLIS) != (e->type == PQ_INT32)) return 0;
    if (e->type != PQ_INT32 && e->type != PQ_INT64) return 0;
    snprintf(f->format, sizeof f->format, "tt%c", unit);
    f->out_width = u == PQ_MILLIS ? 4 : 8;
  }
  f->conv = PQ_CONV_COPY;
  return 1;
}

/// Arrow type of a leaf: the logical type, else the converted type, else the
/// physical type; an annotation that does not fit the physical type is
/// ignored (as Arrow C++ does for unknown logical types).
static void leaf_type(struct pq_field* f, const struct pq_schema_element* e) {
  physical_type(f, e);
  f->phys_width = phys_width(e);
  const struct pq_logical_type* lt = &e->logical;
  int done = 0;
  if (lt->kind != PQ_LOGICAL_NONE) {
    switch (lt->kind) {
      case PQ_LOGICAL_STRING: case PQ_LOGICAL_JSON:
        if (e->type == PQ_BYTE_ARRAY) {
          strcpy(f->format, "u");
          f->is_string = 1;
          if (lt->kind == PQ_LOGICAL_JSON) f->extension = "arrow.json";
        }
        done = 1;
        break;
      case PQ_LOGICAL_DECIMAL:
        done = decimal_type(f, e, lt->decimal_precision, lt->decimal_scale);
        break;
      case PQ_LOGICAL_DATE:
        if (e->type == PQ_INT32) strcpy(f->format, "tdD");
        done = 1;
        break;
      case PQ_LOGICAL_TIME: done = time_type(f, e, lt->unit, 0, 0); break;
      case PQ_LOGICAL_TIMESTAMP: done = time_type(f, e, lt->unit, 1, lt->is_adjusted_to_utc); break;
      case PQ_LOGICAL_INTEGER: done = integer_type(f, e, lt->bit_width, lt->is_signed); break;
      case PQ_LOGICAL_UUID:
        if (e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length == 16) f->extension = "arrow.uuid";
        done = 1;
        break;
      case PQ_LOGICAL_FLOAT16:
        if (e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length == 2) strcpy(f->format, "e");
        done = 1;
        break;
      case PQ_LOGICAL_NULL:
        strcpy(f->format, "n");
        f->conv = PQ_CONV_NULL;
        f->out_width = 0;
        done = 1;
        break;
      default: done = 1; break;  // ENUM, BSON, unknown, ...: the physical type
    }
    if (!done) physical_type(f, e);
    return;
  }
  switch (e->converted_type) {
    case PQ_CT_UTF8: case PQ_CT_JSON:  // JSON as its logical type (older writers set only this)
      if (e->type == PQ_BYTE_ARRAY) {
        strcpy(f->format, "u");
        f->is_string = 1;
        if (e->converted_type == PQ_CT_JSON) f->extension = "arrow.json";
      }
      return;
    case PQ_CT_DECIMAL: done = decimal_type(f, e, e->precision, e->scale); break;
    case PQ_CT_DATE: if (e->type == PQ_INT32) strcpy(f->format, "tdD"); return;
    case PQ_CT_TIME_MILLIS: done = time_type(f, e, PQ_MILLIS, 0, 0); break;
    case PQ_CT_TIME_MICROS: done = time_type(f, e, PQ_MICROS, 0, 0); break;
    case PQ_CT_TIMESTAMP_MILLIS: done = time_type(f, e, PQ_MILLIS, 1, 1); break;
    case PQ_CT_TIMESTAMP_MICROS: done = time_type(f, e, PQ_MICROS, 1, 1); break;
    case PQ_CT_UINT_8: done = integer_type(f, e, 8, 0); break;
    case PQ_CT_UINT_16: done = integer_type(f, e, 16, 0); break;
    case PQ_CT_UINT_32: done = integer_type(f, e, 32, 0); break;
    case PQ_CT_UINT_64: done = integer_type(f, e, 64, 0); break;
    case PQ_CT_INT_8: done = integer_type(f, e, 8, 1); break;
    case PQ_CT_INT_16: done = integer_type(f, e, 16, 1); break;
    case PQ_CT_INT_32: done = integer_type(f, e, 32, 1); break;
    case PQ_CT_INT_64: done = integer_type(f, e, 64, 1); break;
    default: return;
  }
  if (!done) physical_type(f, e);
}

/* ---- the tree --------------------------------------------------------------- */

static int convert(struct schema_ctx* c, int64_t el, struct pq_field* f, int16_t def, int16_t rep,
                   int16_t anc, int nullable, int depth);

/// The field of the next schema element, a child of a node whose levels are
/// pdef / prep / panc.
static int child_field(struct schema_ctx* c, struct pq_field* f, int16_t pdef, int16_t prep,
                       int16_t panc, int depth) {
  int64_t el = c->next;
  if (el >= c->meta->n_schema) return bad(c, el - 1, "a group has more children than elements follow");
  const struct pq_schema_element* e = &c->meta->schema[el];
  enum pq_repetition r = e->has_repetition ? e->repetition : PQ_OPTIONAL;
  if (r == PQ_REPEATED) {
    // A repeated field outside LIST/MAP: a non-null list of required items.
    f->kind = PQ_FIELD_LIST;
    SL_RETURN_NOT_OK(set_name(c, f, &e->name));
    f->nullable = 0;
    f->def = pdef;
    f->rep = prep;
    f->anc_def = panc;
    f->elem_def = (int16_t)(pdef + 1);
    f->children = sl_calloc(c->alloc, 1, sizeof *f->children);
    if (f->children == NULL) return oom(c);
    f->n_children = 1;
    SL_RETURN_NOT_OK(convert(c, el, &f->children[0], (int16_t)(pdef + 1), (int16_t)(prep + 1),
                             (int16_t)(pdef + 1), 0, depth + 1));
    f->first_leaf = f->children[0].first_leaf;
    f->n_leaves = f->children[0].n_leaves;
    return 0;
  }
  int opt = r == PQ_OPTIONAL;
  return convert(c, el, f, (int16_t)(pdef + opt), prep, panc, opt, depth);
}

static int is_list_group(const struct pq_schema_element* e) {
  return e->num_children > 0 && (e->logical.kind == PQ_LOGICAL_LIST ||
                                 (e->logical.kind == PQ_LOGICAL_NONE && e->converted_type == PQ_CT_LIST));
}

static int is_map_group(const struct pq_schema_element* e) {
  return e->num_children > 0 &&
         (e->logical.kind == PQ_LOGICAL_MAP ||
          (e->logical.kind == PQ_LOGICAL_NONE &&
           (e->converted_type == PQ_CT_MAP || e->converted_type == PQ_CT_MAP_KEY_VALUE)));
}

static int bytes_eq(const struct pq_bytes* b, const char* s) {
  size_t n = strlen(s);
  return (size_t)b->size == n && (n == 0 || memcmp(b->data, s, n) == 0);
}

static int bytes_ends_with(const struct pq_bytes* b, const char* s) {
  size_t n = strlen(s);
  return (size_t)b->size >= n && memcmp(b->data + b->size - (int64_t)n, s, n) == 0;
}

static int alloc_children(struct schema_ctx* c, struct pq_field* f, int64_t n) {
  f->children = sl_calloc(c->alloc, (size_t)n, sizeof *f->children);
  if (f->children == NULL) return oom(c);
  f->n_children = n;
  return 0;
}

static void sum_leaves(struct pq_field* f) {
  f->first_leaf = f->n_children ? f->children[0].first_leaf : 0;
  f->n_leaves = 0;
  for (int64_t i = 0; i < f->n_children; ++i) f->n_leaves += f->children[i].n_leaves;
}

/// LIST: one repeated child; the element is chosen by the rules of
/// LogicalTypes.md "Backward-compatibility rules".
static int convert_list(struct schema_ctx* c, int64_t el, struct pq_field* f, int depth) {
  const struct pq_schema_element* e = &c->meta->schema[el];
  if (e->num_children != 1) return bad(c, el, "a LIST group must have exactly one child");
  int64_t rel = c->next;
  if (rel >= c->meta->n_schema) return bad(c, el, "truncated schema");
  const struct pq_schema_element* r = &c->meta->schema[rel];
  if (!r->has_repetition || r->repetition != PQ_REPEATED)
    return bad(c, el, "the child of a LIST group must be repeated");
  f->kind = PQ_FIELD_LIST;
  f->elem_def = (int16_t)(f->def + 1);
  int16_t erep = (int16_t)(f->rep + 1), edef = f->elem_def;
  SL_RETURN_NOT_OK(alloc_children(c, f, 1));
  if (!r->has_type && r->num_children == 1 && !bytes_eq(&r->name, "array") &&
      !bytes_ends_with(&r->name, "_tuple")) {
    c->next = rel + 1;  // the repeated group is only the list's wrapper
    SL_RETURN_NOT_OK(child_field(c, &f->children[0], edef, erep, edef, depth + 1));
  } else {
    // The repeated node itself is the (required) element.
    SL_RETURN_NOT_OK(convert(c, rel, &f->children[0], edef, erep, edef, 0, depth + 1));
  }
  sum_leaves(f);
  return 0;
}

static int convert_map(struct schema_ctx* c, int64_t el, struct pq_field* f, int depth) {
  const struct pq_schema_element* e = &c->meta->schema[el];
  if (e->num_children != 1) return bad(c, el, "a MAP group must have exactly one child");
  int64_t kvel = c->next;
  if (kvel >= c->meta->n_schema) return bad(c, el, "truncated schema");
  const struct pq_schema_element* kv = &c->meta->schema[kvel];
  if (!kv->has_repetition || kv->repetition != PQ_REPEATED || kv->has_type)
    return bad(c, el, "the child of a MAP group must be a repeated group");
  if (kv->num_children < 1 || kv->num_children > 2)
    return bad(c, el, "a MAP key_value group must have one or two children");
  c->next = kvel + 1;
  f->elem_def = (int16_t)(f->def + 1);
  int16_t erep = (int16_t)(f->rep + 1), edef = f->elem_def;
  SL_RETURN_NOT_OK(alloc_children(c, f, 1));
  if (kv->num_children == 1) {
    // No values: a list of the keys (as Arrow C++ reads it).
    f->kind = PQ_FIELD_LIST;
    SL_RETURN_NOT_OK(child_field(c, &f->children[0], edef, erep, edef, depth + 1));
    sum_leaves(f);
    return 0;
  }
  f->kind = PQ_FIELD_MAP;
  const struct pq_schema_element* key = &c->meta->schema[c->next];
  if (!key->has_repetition || key->repetition != PQ_REQUIRED)
    return bad(c, el, "Map keys must be annotated as required");
  struct pq_field* entries = &f->children[0];
  entries->kind = PQ_FIELD_STRUCT;
  SL_RETURN_NOT_OK(set_name(c, entries, &e->name));
  entries->def = edef;
  entries->rep = erep;
  entries->anc_def = edef;
  SL_RETURN_NOT_OK(alloc_children(c, entries, 2));
  // Keys and values are two Arrow levels down (under the entries struct).
  for (int i = 0; i < 2; ++i)
    SL_RETURN_NOT_OK(child_field(c, &entries->children[i], edef, erep, edef, depth + 2));
  sum_leaves(entries);
  sum_leaves(f);
  return 0;
}

static int convert(struct schema_ctx* c, int64_t el, struct pq_field* f, int16_t def, int16_t rep,
                   int16_t anc, int nullable, int depth) {
  if (depth > PQ_MAX_DEPTH) {
    const struct pq_bytes* n = &c->meta->schema[el].name;
    return sl_error_set(c->error, ENOTSUP, "%s: schema element %" PRId64 " ('%.*s'): nested "
                        "deeper than sluice's limit of %d levels", c->name, el,
                        (int)(n->size > 200 ? 200 : n->size), n->data ? (const char*)n->data : "",
                        PQ_MAX_DEPTH);
  }
  const struct pq_schema_element* e = &c->meta->schema[el];
  c->next = el + 1;
  SL_RETURN_NOT_OK(set_name(c, f, &e->name));
  f->has_field_id = e->has_field_id;
  f->field_id = e->field_id;
  f->nullable = nullable;
  f->def = def;
  f->rep = rep;
  f->anc_def = anc;
  if (e->has_type) {
    if (e->num_children != 0) return bad(c, el, "a primitive node has children");
    if (e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length <= 0)
      return bad(c, el, "FIXED_LEN_BYTE_ARRAY without a positive type_length");
    if ((int)e->type < PQ_BOOLEAN || (int)e->type > PQ_FIXED_LEN_BYTE_ARRAY)
      return bad(c, el, "unknown physical type");
    f->kind = PQ_FIELD_LEAF;
    f->element = e;
    f->leaf = c->n_leaves++;
    f->first_leaf = f->leaf;
    f->n_leaves = 1;
    leaf_type(f, e);
    return 0;
  }
  if (e->num_children <= 0) return bad(c, el, "a group without children");
  if (e->num_children > c->meta->n_schema - c->next)
    return bad(c, el, "more children than schema elements");
  if (is_list_group(e)) return convert_list(c, el, f, depth);
  if (is_map_group(e)) return convert_map(c, el, f, depth);
  f->kind = PQ_FIELD_STRUCT;
  SL_RETURN_NOT_OK(alloc_children(c, f, e->num_children));
  for (int64_t i = 0; i < e->num_children; ++i)
    SL_RETURN_NOT_OK(child_field(c, &f->children[i], def, rep, anc, depth + 1));
  sum_leaves(f);
  return 0;
}

/* ---- Arrow schema ---------------------------------------------------------- */

int sl_pq_field_arrow_schema(const struct pq_field* f, const struct sluice_allocator* alloc,
                          struct ArrowSchema* out, struct sluice_error* error) {
  char fsl[32];
  snprintf(fsl, sizeof fsl, "+w:%d", (int)f->fixed_size);
  const char* format = f->kind == PQ_FIELD_LEAF     ? (f->dict ? f->dict_index_format : f->format)
                       : f->kind == PQ_FIELD_STRUCT ? "+s"
                       : f->kind == PQ_FIELD_LIST   ? (f->fixed_size > 0 ? fsl : f->large ? "+L" : "+l")
                                                    : "+m";
  int64_t flags = f->nullable ? ARROW_FLAG_NULLABLE : 0;
  if (f->kind == PQ_FIELD_LEAF && f->dict && f->dict_ordered) flags |= ARROW_FLAG_DICTIONARY_ORDERED;
  if (f->kind == PQ_FIELD_MAP && f->keys_sorted) flags |= ARROW_FLAG_MAP_KEYS_SORTED;
  SL_RETURN_NOT_OK(sl_schema_init(out, alloc, format, f->name, flags,
                                  f->kind == PQ_FIELD_LEAF ? 0 : f->n_children, error));
  int rc = 0;
  if (f->metadata) {
    rc = sl_schema_set_metadata(out, f->metadata, error);
  } else if (f->extension) {
    rc = sl_schema_set_extension(out, f->extension, error);
  }
  if (rc == 0 && f->has_field_id) {
    char id[16];
    snprintf(id, sizeof id, "%" PRId32, f->field_id);
    rc = sl_schema_put_metadata(out, "PARQUET:field_id", id, error);
  }
  if (rc == 0 && f->kind == PQ_FIELD_LEAF && f->dict) {
    rc = sl_schema_alloc_dictionary(out, error);
    if (rc == 0) rc = sl_schema_init(out->dictionary, alloc, f->format, NULL, 0, 0, error);
  }
  for (int64_t i = 0; rc == 0 && f->kind != PQ_FIELD_LEAF && i < f->n_children; ++i)
    rc = sl_pq_field_arrow_schema(&f->children[i], alloc, out->children[i], error);
  if (rc != 0) out->release(out);
  return rc;
}

/* ---- entry points ---------------------------------------------------------- */

static int collect_leaves(struct pq_schema* s, struct pq_field* f, char* path, size_t len,
                          size_t cap, struct schema_ctx* c) {
  size_t n = strlen(f->name);
  size_t at = len ? len + 1 : 0;
  if (at + n + 1 > cap) return sl_error_set(c->error, EILSEQ, "%s: column path too long", c->name);
  if (len) path[len] = '.';
  memcpy(path + at, f->name, n + 1);
  if (f->kind == PQ_FIELD_LEAF) {
    if (f->leaf < 0 || f->leaf >= s->n_leaves) return bad(c, 0, "leaf numbering");
    s->leaves[f->leaf] = f;
    f->path = sl_strdup(c->alloc, path);
    if (f->path == NULL) return oom(c);
  }
  for (int64_t i = 0; i < f->n_children; ++i)
    SL_RETURN_NOT_OK(collect_leaves(s, &f->children[i], path, at + n, cap, c));
  path[len] = '\0';
  return 0;
}

void sl_pq_schema_release(struct pq_schema* s) {
  if (s->leaves) sl_free(s->alloc, s->leaves, (size_t)s->n_leaves * sizeof *s->leaves);
  field_release(&s->root, s->alloc);
  if (s->arrow.release) s->arrow.release(&s->arrow);
  memset(s, 0, sizeof *s);
}

int sl_pq_schema_build(const struct pq_file_meta* meta, const struct sluice_allocator* alloc,
                    const char* name, struct pq_schema* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  out->alloc = alloc;
  struct schema_ctx c = {.meta = meta, .alloc = alloc, .name = name, .next = 1, .error = error};
  if (meta->n_schema < 1 || meta->schema[0].has_type)
    return sl_error_set(error, EILSEQ, "%s: the schema has no root group", name);
  const struct pq_schema_element* root = &meta->schema[0];
  if (root->num_children < 0 || root->num_children > meta->n_schema - 1)
    return sl_error_set(error, EILSEQ, "%s: the schema root claims %d children of %" PRId64
                        " elements", name, (int)root->num_children, meta->n_schema - 1);
  struct pq_field* f = &out->root;
  f->kind = PQ_FIELD_STRUCT;
  int rc = 0;
  if (root->num_children > 0) rc = alloc_children(&c, f, root->num_children);
  for (int64_t i = 0; rc == 0 && i < root->num_children; ++i) {
    rc = child_field(&c, &f->children[i], 0, 0, 0, 1);
    f->children[i].top_level = f->children[i].kind == PQ_FIELD_LEAF;
  }
  if (rc == 0 && c.next != meta->n_schema)
    rc = sl_error_set(error, EILSEQ, "%s: %" PRId64 " schema elements are not part of the tree",
                      name, meta->n_schema - c.next);
  if (rc == 0) {
    sum_leaves(f);
    out->n_leaves = c.n_leaves;
    if (out->n_leaves > 0) {
      out->leaves = sl_calloc(alloc, (size_t)out->n_leaves, sizeof *out->leaves);
      if (out->leaves == NULL) rc = oom(&c);
    }
  }
  char path[4096];
  for (int64_t i = 0; rc == 0 && i < f->n_children; ++i) {
    path[0] = '\0';
    rc = collect_leaves(out, &f->children[i], path, 0, sizeof path, &c);
  }
  if (rc == 0) rc = sl_schema_init(&out->arrow, alloc, "+s", "", 0, f->n_children, error);
  for (int64_t i = 0; rc == 0 && i < f->n_children; ++i)
    rc = sl_pq_field_arrow_schema(&f->children[i], alloc, out->arrow.children[i], error);
  if (rc != 0) sl_pq_schema_release(out);
  return rc;
}
