// The Avro object container file writer: Arrow record batches → one Avro
// record per row. The type mapping is the inverse of the reader's
// (avro_reader.h), so that a round trip keeps types where Avro can say them:
//
//   null → null; bool → boolean; int8/16/32, uint8/16 → int; int64, uint32 →
//   long; uint64 → long (a value above INT64_MAX is an error); float16/float32
//   → float; float64 → double; utf8/large_utf8 → string; binary/large_binary
//   → bytes; fixed_size_binary[N] → fixed N; decimal128/256 → bytes with
//   logicalType decimal (big-endian two's complement, minimal length; the
//   reader gives decimal256 back only above precision 38), or the fixed of
//   the stream's Avro schema when it read the decimal from one (of that
//   precision and scale: same name and size, values sign-extended to it);
//   date32 → int date;
//   date64 → int date (an error unless a whole day); time32[s|ms] → int
//   time-millis (s × 1000); time64[us] → long time-micros; time64[ns] → long
//   time-micros (an error unless whole microseconds); timestamp[s|ms] → long
//   timestamp-millis (s × 1000), [us] → timestamp-micros, [ns] →
//   timestamp-nanos, with a time zone, local-timestamp-* without;
//   interval[month_day_nano] → fixed
//   12 duration (months, days, milliseconds; an error for negative parts or
//   nanoseconds that are not whole milliseconds); dictionary<int, utf8> →
//   enum when the first batch's dictionary values are distinct Avro names
//   (its symbols, in dictionary order; a later batch's value that is not one
//   of them is an error), else string; a dictionary of other values → its
//   values' type, decoded; list/large_list/fixed_size_list →
//   array; struct → record (nested names: see below); map<utf8, T> → map;
//   dense/sparse union → a union of the members' types ("null" in front when
//   a member is nullable and none is of type null; two members of one Avro
//   type are ENOTSUP). A field whose Arrow schema says nullable becomes
//   ["null", T] with default null (list items and map values too); a null in
//   a field that is not nullable is an error, named by column and row.
//   Durations and other intervals are ENOTSUP, naming the column.
//   Where the Avro type is wider than the Arrow one (int8/16, uint8/16/32/64,
//   float16, large utf8/binary, date64, time32[s], timestamp[s], a zone
//   other than UTC, large_list, fixed_size_list), the type is an object
//   carrying "sluice.arrow_type": the Arrow format, which sluice's reader
//   gives back (avro_schema.c, apply_arrow_type).
//
// The writer only writes into the sink; committing (atomicity) is the
// caller's. Blocks are encoded straight from the Arrow buffers (offsets at
// every level, validity bitmaps); arrays and maps are one block of items
// then 0; zero rows give a header-only file.
//
// Names: records, enums and fixed types keep the full names of the Avro
// schema the stream came from (schema metadata "avro.schema"; a record only
// while it has that schema's fields in that order; a column renamed since
// takes the source field at its place), else a union member's
// name, else one after their path ("Root" at the top, "Root_a_b",
// "Root_l_item"), made unique (see "Names" below). A schema whose root is
// no record names the column "value" the reader made of it; that column
// alone is written as the root (ensure_header). Field
// names that are not Avro names ([A-Za-z_][A-Za-z0-9_]*) are sanitized:
// other characters become '_', a leading digit gets a '_' in front, and two
// fields sanitized to the same name are an error.
//
// Options (sl_write_args.format_options, "key=value,key=value"):
//   codec=null|deflate|snappy|zstandard|bzip2|xz|lzma  (default: from
//        sl_write_args.compression — zstd → zstandard, or the codec's name —
//        else null)
//        lzma is avro-c's own codec (raw LZMA2, not in the spec): only avro-c
//        and sluice read it.
//   level=N          compression level (codec default if absent)
//   block_size=N     uncompressed bytes per block before a new one starts
//                    (alias sync_interval; default 256 KiB)
//   sync=<32 hex>    the 16-byte sync marker (default: random)
//   enums=true|false string dictionaries as enums of the first batch's
//                    values (default), or as strings: a stream whose
//                    dictionary grows (IPC deltas) has no symbols up front
#include "avro_writer.h"

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "avro_compress.h"
#include "avro_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_decimal.h"
#include "core/sl_error.h"
#include "core/sl_name_set.h"
#include "core/sl_options.h"
#include "core/sl_read.h"
#include "core/sl_value_parse.h"
#include "core/sl_value_text.h"
#include "core/sl_type.h"
#include "io/sl_sink.h"
#include "core/sl_cores.h"

#define AW_DEFAULT_BLOCK ((size_t)256 << 10)
#define AW_MAX_DEPTH 64

/// An enum from a dictionary: the symbols are the first batch's dictionary
/// values; each batch's dictionary indexes are mapped onto them.
struct aw_enum {
  json_t* index;      ///< symbol → its position (json integer)
  int32_t* map;       ///< this batch's dictionary index → symbol position, -1 = none
  int64_t map_len;
  int64_t gen;        ///< the batch `map` was built for
};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define AW_LITTLE_ENDIAN 1
#else
#define AW_LITTLE_ENDIAN 0
#endif

struct aw_node {
  struct sl_type type;
  int nullable;
  int64_t n_children;
  struct aw_node* children;  ///< struct fields; list item; map key, value
  struct aw_node* dict;      ///< dictionary value node
  struct aw_enum* en;        ///< dictionary written as an enum (else as strings)
  char* field_name;          ///< sanitized (owned)
  int null_branch;           ///< unions: the branch nulls take, -1 = none
  int branch_shift;          ///< unions: 1 when "null" was put in front
  int64_t fixed_size;        ///< decimals: written as a fixed of this size (0: bytes)
  int uuid;                  ///< strings: a uuid logical type (each value checked)
};

struct aw_buf {
  uint8_t* data;
  size_t size, cap;
};

struct aw_ctx {
  const struct sluice_allocator* alloc;
  struct sl_sink* sink;  ///< polled for a cancelled write (aw_poll)
  int64_t poll_left;     ///< values to encode before the next poll
  struct aw_buf data;
  struct avro_buf packed;
  json_t* names;      ///< full name -> the type defined so far under it
  const char* ns;     ///< the namespace the type being built is in
  const char* column;
  int64_t row;
  int64_t gen;  ///< batch counter (enum index maps are rebuilt per batch)
  enum avro_codec codec;
  int level;
  size_t block_size;
  int no_enums;  ///< enums=false: string dictionaries are written as strings
  uint8_t sync[16];
  int have_sync;
};

/* ---- Output buffer ----------------------------------------------------------- */

static int buf_reserve(struct aw_ctx* ctx, size_t more, struct sluice_error* error) {
  struct aw_buf* b = &ctx->data;
  if (b->size + more <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64 << 10;
  while (cap < b->size + more) {
    if (cap > SIZE_MAX / 2) return sl_error_set(error, EFBIG, "avro: block too large");
    cap *= 2;
  }
  uint8_t* p = b->data ? sl_realloc_buffer(ctx->alloc, b->data, b->cap, cap)
                       : sl_alloc_buffer(ctx->alloc, cap);
  if (p == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory (%zu bytes)", cap);
  b->data = p;
  b->cap = cap;
  return 0;
}

static int put_bytes(struct aw_ctx* ctx, const void* p, size_t n, struct sluice_error* error) {
  SL_RETURN_NOT_OK(buf_reserve(ctx, n, error));
  if (n > 0) memcpy(ctx->data.data + ctx->data.size, p, n);
  ctx->data.size += n;
  return 0;
}

static size_t zigzag(int64_t v, uint8_t* out) {
  uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  size_t n = 0;
  while (z >= 0x80) {
    out[n++] = (uint8_t)(z | 0x80);
    z >>= 7;
  }
  out[n++] = (uint8_t)z;
  return n;
}

static int put_long(struct aw_ctx* ctx, int64_t v, struct sluice_error* error) {
  SL_RETURN_NOT_OK(buf_reserve(ctx, 10, error));
  ctx->data.size += zigzag(v, ctx->data.data + ctx->data.size);
  return 0;
}

static int put_counted(struct aw_ctx* ctx, const void* p, int64_t n, struct sluice_error* error) {
  SL_RETURN_NOT_OK(put_long(ctx, n, error));
  return put_bytes(ctx, p, (size_t)n, error);
}

/* ---- Schema ------------------------------------------------------------------ */

static void node_reset(const struct sluice_allocator* alloc, struct aw_node* n) {
  if (n->children != NULL) {
    for (int64_t i = 0; i < n->n_children; ++i) node_reset(alloc, &n->children[i]);
    sl_free(alloc, n->children, (size_t)n->n_children * sizeof *n->children);
  }
  if (n->dict != NULL) {
    node_reset(alloc, n->dict);
    sl_free(alloc, n->dict, sizeof *n->dict);
  }
  if (n->field_name != NULL) sl_free(alloc, n->field_name, strlen(n->field_name) + 1);
  if (n->en != NULL) {
    json_decref(n->en->index);
    if (n->en->map != NULL) sl_free(alloc, n->en->map, (size_t)n->en->map_len * sizeof(int32_t));
    sl_free(alloc, n->en, sizeof *n->en);
  }
  memset(n, 0, sizeof *n);
}

static char* sanitize(const struct sluice_allocator* alloc, const char* name) {
  size_t len = name != NULL ? strlen(name) : 0;
  int lead = len == 0 || (name[0] >= '0' && name[0] <= '9');
  char* out = sl_alloc(alloc, len + (size_t)lead + 1);
  if (out == NULL) return NULL;
  size_t k = 0;
  if (lead) out[k++] = '_';
  for (size_t i = 0; i < len; ++i) {
    char c = name[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    out[k++] = ok ? c : '_';
  }
  out[k] = '\0';
  // The allocation was len + lead + 1 bytes and k == len + lead: sizes match.
  return out;
}

/* ---- Names ------------------------------------------------------------------ */

// Named types (records, enums, fixed) keep the names the stream's Avro schema
// gives them (schema metadata "avro.schema", which sluice's reader attaches:
// the writer's schema, or the reader schema; parsed as the reader parses it,
// which resolves names and references), so that the original schema still
// resolves against the copy; else a union member's name (the reader names
// members after their branch's type); else a name made from the path.
// While the schema is built every name is a full name; relative_names()
// then writes them as Avro does, short within their namespace.

static int is_avro_name(const uint8_t* p, int64_t n);

/// Whether `s` is the name of an Avro type ("int", "record", and "error",
/// a record's other spelling), which no named type may have.
static int is_type_word(const char* s) {
  for (int k = AVRO_NULL; k <= AVRO_FIXED; ++k) {
    if (strcmp(s, sl_avro_kind_name((enum avro_kind)k)) == 0) return 1;
  }
  return strcmp(s, "error") == 0;
}

/// Whether `s` is a full name a writer may give: dotted Avro names, the last
/// not a type's name.
static int is_full_name(const char* s) {
  const char* p = s;
  for (;;) {
    const char* dot = strchr(p, '.');
    size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);
    if (!is_avro_name((const uint8_t*)p, (int64_t)n)) return 0;
    if (dot == NULL) return !is_type_word(p);
    p = dot + 1;
  }
}

static int is_named_kind(const char* type) {
  return type != NULL && (strcmp(type, "record") == 0 || strcmp(type, "error") == 0 ||
                          strcmp(type, "enum") == 0 || strcmp(type, "fixed") == 0);
}

/// `full`'s namespace into ns (empty for the null namespace).
static void namespace_of(const char* full, char* ns, size_t cap) {
  const char* dot = strrchr(full, '.');
  snprintf(ns, cap, "%.*s", dot != NULL ? (int)(dot - full) : 0, full);
}

/// The source type of a node that is not a union: ["null", T] is T; NULL
/// for none (or another union).
static const struct avro_node* src_value(const struct avro_node* src) {
  const struct avro_node* value = NULL;
  int null_index;
  if (src == NULL || src->kind != AVRO_UNION) return src;
  return sl_avro_node_nullable(src, &value, &null_index) ? value : NULL;
}

/// The full name for a named type of kind `kind`: the source's (`src`, a
/// type of that kind), else `member` (a union member's name), else NULL;
/// only a name a writer may give.
static const char* src_name(const struct avro_node* src, enum avro_kind kind,
                            const char* member) {
  const char* name = src != NULL && src->kind == kind ? src->name : member;
  return name != NULL && is_full_name(name) ? name : NULL;
}

/// A unique full name made from `path`, in the enclosing namespace
/// (registered; NULL when out of memory).
static json_t* unique_name(struct aw_ctx* ctx, const char* path) {
  char buf[1024];
  const char* dot = ctx->ns[0] != '\0' ? "." : "";
  snprintf(buf, sizeof buf, "%.500s%s%.400s", ctx->ns, dot, path);
  for (int i = 2; json_object_get(ctx->names, buf) != NULL; ++i) {
    snprintf(buf, sizeof buf, "%.500s%s%.400s_%d", ctx->ns, dot, path, i);
  }
  if (json_object_set_new(ctx->names, buf, json_true()) != 0) return NULL;
  return json_string(buf);
}

/// The name a nested named type has (NULL if `t` is none).
static const char* named_of(const json_t* t) {
  if (json_is_string(t)) return is_type_word(json_string_value(t)) ? NULL : json_string_value(t);
  return is_named_kind(json_string_value(json_object_get(t, "type")))
             ? json_string_value(json_object_get(t, "name"))
             : NULL;
}

/// Whether two types built under one full name are the same: nested named
/// types compare by name (Avro defines each once; the second is a reference).
static int same_def(const json_t* a, const json_t* b, int top) {
  const char* na = top ? NULL : named_of(a);
  const char* nb = top ? NULL : named_of(b);
  if (na != NULL || nb != NULL) return na != NULL && nb != NULL && strcmp(na, nb) == 0;
  if (json_is_object(a) && json_is_object(b)) {
    if (json_object_size(a) != json_object_size(b)) return 0;
    const char* k;
    const json_t* v;
    json_object_foreach((json_t*)a, k, v) {
      const json_t* w = json_object_get(b, k);
      if (w == NULL || !same_def(v, w, 0)) return 0;
    }
    return 1;
  }
  if (json_is_array(a) && json_is_array(b)) {
    if (json_array_size(a) != json_array_size(b)) return 0;
    for (size_t i = 0; i < json_array_size(a); ++i) {
      if (!same_def(json_array_get(a, i), json_array_get(b, i), 0)) return 0;
    }
    return 1;
  }
  return json_equal(a, b);
}

/// Names `def` (a record, enum or fixed just built; taken): `want` (a full
/// name) when no type has it yet, or a reference to it when the type that
/// has it is the same (the stream's schema uses one named type twice); else
/// a new name from `path`. NULL when out of memory.
static json_t* name_type(struct aw_ctx* ctx, json_t* def, const char* want, const char* path) {
  if (def == NULL) return NULL;
  if (want != NULL) {
    const json_t* had = json_object_get(ctx->names, want);
    if (json_object_set_new(def, "name", json_string(want)) != 0) {
      json_decref(def);
      return NULL;
    }
    if (had == NULL) {
      if (json_object_set(ctx->names, want, def) == 0) return def;
      json_decref(def);
      return NULL;
    }
    if (json_is_object(had) && same_def(had, def, 1)) {
      json_decref(def);
      return json_string(want);
    }
  }
  json_t* name = unique_name(ctx, path);
  if (name == NULL || json_object_set(ctx->names, json_string_value(name), def) != 0 ||
      json_object_set_new(def, "name", name) != 0) {
    json_decref(def);
    return NULL;
  }
  return def;
}

/// Writes the full names in `t` (in namespace `ns`) as short names within
/// their namespace; a type of the null namespace inside another namespace
/// gets "namespace": "", others keep their full name. References stay full.
static int relative_names(json_t* t, const char* ns) {
  int rc = 0;
  if (json_is_array(t)) {
    size_t i;
    json_t* b;
    json_array_foreach(t, i, b) rc |= relative_names(b, ns);
    return rc;
  }
  const char* type = json_string_value(json_object_get(t, "type"));
  if (type == NULL) return 0;
  char inner[1024], short_name[1024];
  snprintf(inner, sizeof inner, "%s", ns);
  if (is_named_kind(type)) {
    const char* full = json_string_value(json_object_get(t, "name"));
    const char* dot = full != NULL ? strrchr(full, '.') : NULL;
    if (full != NULL) namespace_of(full, inner, sizeof inner);
    if (dot != NULL && strcmp(inner, ns) == 0) {
      snprintf(short_name, sizeof short_name, "%s", dot + 1);
      rc |= json_object_set_new(t, "name", json_string(short_name));
    } else if (full != NULL && dot == NULL && ns[0] != '\0') {
      rc |= json_object_set_new(t, "namespace", json_string(""));
    }
  }
  if (strcmp(type, "array") == 0) rc |= relative_names(json_object_get(t, "items"), inner);
  if (strcmp(type, "map") == 0) rc |= relative_names(json_object_get(t, "values"), inner);
  size_t i;
  json_t* f;
  json_array_foreach(json_object_get(t, "fields"), i, f) {
    rc |= relative_names(json_object_get(f, "type"), inner);
  }
  return rc;
}

static json_t* with_logical(const char* base, const char* logical) {
  return json_pack("{s:s, s:s}", "type", base, "logicalType", logical);
}

/// Notes the Arrow type where Avro's is wider (the reader gives it back; other
/// readers ignore the attribute, as the spec lets them).
static json_t* with_arrow_type(json_t* t, const char* format) {
  if (json_is_string(t)) {
    json_t* o = json_pack("{s:O}", "type", t);
    json_decref(t);
    t = o;
  }
  if (t != NULL) json_object_set_new(t, "sluice.arrow_type", json_string(format));
  return t;
}

static int build(struct aw_ctx* ctx, const struct ArrowSchema* s, const struct ArrowArray* a,
                 struct aw_node* node, const char* path, const char* column, int depth,
                 const struct avro_node* src, const char* member, json_t** out,
                 struct sluice_error* error);

/// Child `i` of the first batch's array `a` (NULL if there is none).
static const struct ArrowArray* child_of(const struct ArrowArray* a, int64_t i) {
  return a != NULL && i < a->n_children ? a->children[i] : NULL;
}

/// Whether the source record `src` has the fields of `s`, in its order.
static int same_fields(const struct avro_node* src, const struct ArrowSchema* s) {
  if (src == NULL || src->kind != AVRO_RECORD || src->n != s->n_children) return 0;
  for (int64_t i = 0; i < s->n_children; ++i) {
    const char* an = s->children[i]->name;
    if (an == NULL || strcmp(src->names[i], an) != 0) return 0;
  }
  return 1;
}

/// A record for the struct `s`. Its name is the source record's when that
/// has the same fields in the same order (a projection keeps nested names
/// only), else `member`'s, else one made from `path`; `*out` is a reference
/// when the source uses that record twice.
/// `column`: the record's path for messages ("" for the root: its fields
/// are the columns; a nested record's fields are named "outer.x").
static int build_record(struct aw_ctx* ctx, const struct ArrowSchema* s,
                        const struct ArrowArray* a, struct aw_node* node, const char* path,
                        const char* column, int depth, const struct avro_node* src,
                        const char* member, json_t** out, struct sluice_error* error) {
  node->n_children = s->n_children;
  node->children = sl_calloc(ctx->alloc, (size_t)(s->n_children ? s->n_children : 1),
                             sizeof *node->children);
  if (node->children == NULL) {
    node->n_children = 0;
    return sl_error_set(error, ENOMEM, "avro: out of memory");
  }
  const char* want = src_name(src, AVRO_RECORD, member);
  if (want != NULL && src != NULL && src->kind == AVRO_RECORD && !same_fields(src, s)) want = NULL;
  json_t* fields = json_array();
  json_t* rec = json_pack("{s:s, s:s, s:o}", "type", "record", "name", "", "fields", fields);
  if (rec == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory");
  // Nested types made up here are in the record's namespace.
  const char* outer = ctx->ns;
  char ns[1024];
  if (want != NULL) {
    namespace_of(want, ns, sizeof ns);
    ctx->ns = ns;
  }
  // Field names made so far, and the source record's, hashed: searching
  // them linearly for each field took minutes on 100k columns.
  struct sl_name_set made, src_names, columns;
  sl_name_set_init(&made, ctx->alloc);
  sl_name_set_init(&src_names, ctx->alloc);
  sl_name_set_init(&columns, ctx->alloc);
  int rc = 0;
  // As many fields as the source record: a column it has no field of (one
  // renamed) is the source's field at its position, unless a column has
  // that field's name; so a renamed column keeps its types' names.
  int by_position = src != NULL && src->kind == AVRO_RECORD && src->n == s->n_children;
  if (src != NULL && src->kind == AVRO_RECORD) {
    for (int64_t i = 0; rc == 0 && i < src->n; ++i) {
      rc = sl_name_set_put(&src_names, src->names[i], i);  // distinct: the parser checks
    }
    for (int64_t i = 0; rc == 0 && by_position && i < s->n_children; ++i) {
      if (s->children[i]->name != NULL) rc = sl_name_set_put(&columns, s->children[i]->name, i);
    }
    if (rc != 0) rc = sl_error_set(error, ENOMEM, "avro: out of memory");
  }
  for (int64_t i = 0; rc == 0 && i < s->n_children; ++i) {
    const struct ArrowSchema* c = s->children[i];
    struct aw_node* child = &node->children[i];
    child->field_name = sanitize(ctx->alloc, c->name);
    int64_t j = -1;
    if (child->field_name == NULL || sl_name_set_add(&made, child->field_name, i, &j) != 0) {
      rc = sl_error_set(error, ENOMEM, "avro: out of memory");
      break;
    }
    if (j >= 0) {
      rc = sl_error_set(error, EINVAL,
                        "avro: columns '%s' and '%s' both become the Avro name '%s'",
                        s->children[j]->name ? s->children[j]->name : "",
                        c->name ? c->name : "", child->field_name);
      break;
    }
    char sub[512];
    snprintf(sub, sizeof sub, "%.200s_%.200s", path, child->field_name);
    json_t* t = NULL;
    int64_t from = c->name != NULL ? sl_name_set_find(&src_names, c->name) : -1;
    if (from < 0 && by_position && sl_name_set_find(&columns, src->names[i]) < 0) from = i;
    char named[512];
    snprintf(named, sizeof named, "%.250s%s%.250s", column, column[0] != '\0' ? "." : "",
             c->name ? c->name : "");
    rc = build(ctx, c, child_of(a, i), child, sub, named, depth + 1,
               from >= 0 ? src->items[from] : NULL, NULL, &t, error);
    if (rc != 0) break;
    if (child->nullable) t = json_pack("[s, o]", "null", t);
    json_t* f = t == NULL ? NULL
                : child->nullable
                    ? json_pack("{s:s, s:o, s:n}", "name", child->field_name, "type", t, "default")
                    : json_pack("{s:s, s:o}", "name", child->field_name, "type", t);
    if (f == NULL || json_array_append_new(fields, f) != 0) {
      rc = sl_error_set(error, ENOMEM, "avro: out of memory");
    }
  }
  ctx->ns = outer;
  sl_name_set_release(&made);
  sl_name_set_release(&src_names);
  sl_name_set_release(&columns);
  if (rc != 0) {
    json_decref(rec);
    return rc;
  }
  *out = name_type(ctx, rec, want, path);
  return *out != NULL ? 0 : sl_error_set(error, ENOMEM, "avro: out of memory");
}

/// The key under which Avro forbids two branches of one union: the type
/// name, or the full name of a named type. NULL if `t` is malformed.
static const char* union_key(const json_t* t) {
  if (json_is_string(t)) return json_string_value(t);
  const char* type = json_string_value(json_object_get(t, "type"));
  if (type != NULL && (strcmp(type, "record") == 0 || strcmp(type, "fixed") == 0 ||
                       strcmp(type, "enum") == 0)) {
    return json_string_value(json_object_get(t, "name"));
  }
  return type;
}

static int build_union(struct aw_ctx* ctx, const struct ArrowSchema* s,
                       const struct ArrowArray* a, struct aw_node* node, const char* path,
                       const char* column, int depth, const struct avro_node* src, json_t** out,
                       struct sluice_error* error) {
  node->n_children = s->n_children;
  node->children = sl_calloc(ctx->alloc, (size_t)(s->n_children ? s->n_children : 1),
                             sizeof *node->children);
  if (node->children == NULL) {
    node->n_children = 0;
    return sl_error_set(error, ENOMEM, "avro: out of memory");
  }
  json_t* branches = json_array();
  if (branches == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory");
  int any_nullable = 0;
  node->null_branch = -1;
  int by_branch = src != NULL && src->kind == AVRO_UNION && src->n == s->n_children;
  for (int64_t i = 0; i < s->n_children; ++i) {
    char sub[512], member[1024];
    snprintf(sub, sizeof sub, "%.400s_%" PRId64, path, i);
    // The source's branch; else the member's name names a record, enum or fixed.
    const struct avro_node* branch = by_branch ? src->items[i] : NULL;
    const char* mn = s->children[i]->name;
    int named = branch == NULL && mn != NULL && strchr(mn, '.') == NULL && is_full_name(mn);
    if (named) snprintf(member, sizeof member, "%.500s%s%.300s", ctx->ns, ctx->ns[0] ? "." : "", mn);
    json_t* t = NULL;
    int rc = build(ctx, s->children[i], child_of(a, i), &node->children[i], sub, column,
                   depth + 1, branch, named ? member : NULL, &t, error);
    if (rc != 0) {
      json_decref(branches);
      return rc;
    }
    if (node->children[i].nullable) any_nullable = 1;
    node->children[i].nullable = 0;
    if (node->children[i].type.id == SL_TYPE_NA && node->null_branch < 0) node->null_branch = (int)i;
    json_array_append_new(branches, t);
  }
  node->branch_shift = 0;
  if (any_nullable && node->null_branch < 0) {
    json_array_insert_new(branches, 0, json_string("null"));
    node->branch_shift = 1;
    node->null_branch = 0;
  }
  size_t n = json_array_size(branches);
  for (size_t i = 0; i < n; ++i) {
    const char* ki = union_key(json_array_get(branches, i));
    if (ki == NULL) {  // (union_key has no key for a union: a branch that is one)
      json_decref(branches);
      return sl_error_set(error, ENOTSUP, "avro: column '%s': a union directly inside a union "
                          "(Avro forbids it: flatten the members into one union)", column);
    }
    for (size_t j = 0; j < i; ++j) {
      const char* kj = union_key(json_array_get(branches, j));
      if (ki == NULL || kj == NULL || strcmp(ki, kj) == 0) {
        sl_error_set(error, ENOTSUP,
                     "avro: column '%s': union has two '%s' members (Avro allows one "
                     "branch per type)", column, ki != NULL ? ki : "?");
        json_decref(branches);  // after the message: ki points into it
        return ENOTSUP;
      }
    }
  }
  *out = branches;
  return 0;
}

static int is_avro_name(const uint8_t* p, int64_t n) {
  if (n <= 0 || n > 255) return 0;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t c = p[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
             (i > 0 && c >= '0' && c <= '9');
    if (!ok) return 0;
  }
  return 1;
}

static void string_at(enum sl_type_id id, const struct ArrowArray* a, int64_t p,
                      const uint8_t** data, int64_t* n) {
  int64_t start, end;
  if (id == SL_TYPE_LARGE_STRING || id == SL_TYPE_LARGE_BINARY) {
    start = ((const int64_t*)a->buffers[1])[p];
    end = ((const int64_t*)a->buffers[1])[p + 1];
  } else {
    start = ((const int32_t*)a->buffers[1])[p];
    end = ((const int32_t*)a->buffers[1])[p + 1];
  }
  *data = (const uint8_t*)a->buffers[2] + start;
  *n = end - start;
}

static int is_null(const struct ArrowArray* a, int64_t p);

/// An enum schema from the first batch's dictionary `d` when every value is
/// a distinct Avro name; else NULL (the column is written as strings).
static json_t* try_enum(struct aw_ctx* ctx, struct aw_node* node, const struct ArrowArray* d,
                        const char* path, const char* name, struct sluice_error* error,
                        int* rc) {
  *rc = 0;
  if (ctx->no_enums || d == NULL || d->length <= 0 || d->length > 100000) return NULL;
  json_t* index = json_object();
  json_t* symbols = json_array();
  if (index == NULL || symbols == NULL) goto fail;
  for (int64_t k = 0; k < d->length; ++k) {
    const uint8_t* p;
    int64_t n;
    if (is_null(d, d->offset + k)) goto fail;
    string_at(node->dict->type.id, d, d->offset + k, &p, &n);
    if (!is_avro_name(p, n) || json_object_getn(index, (const char*)p, (size_t)n) != NULL) goto fail;
    if (json_object_setn_new(index, (const char*)p, (size_t)n, json_integer(k)) != 0 ||
        json_array_append_new(symbols, json_stringn((const char*)p, (size_t)n)) != 0) {
      goto fail;
    }
  }
  node->en = sl_calloc(ctx->alloc, 1, sizeof *node->en);
  if (node->en == NULL) {
    *rc = sl_error_set(error, ENOMEM, "avro: out of memory");
    goto fail;
  }
  node->en->index = index;
  node->en->gen = -1;
  json_t* def = json_pack("{s:s, s:s, s:o}", "type", "enum", "name", "", "symbols", symbols);
  return name_type(ctx, def, name, path);
fail:
  json_decref(index);
  json_decref(symbols);
  return NULL;
}

/// The name for a fixed of `size` bytes: the source's (none if of another
/// size), else `member`'s (src_name).
static const char* fixed_name(const struct avro_node* src, int64_t size, const char* member) {
  if (src != NULL && src->kind == AVRO_FIXED && src->size != size) return NULL;
  return src_name(src, AVRO_FIXED, member);
}

/// The size of the fixed a decimal(precision, scale) was read from: `src`
/// is a fixed with that decimal logical type (the parse checked that its
/// size holds the precision); else 0 (bytes). A fixed and bytes do not
/// resolve against each other in Avro, so the copy of a file keeps the
/// fixed (Java and Spark write decimals so).
static int64_t decimal_fixed_size(const struct avro_node* src, int precision, int scale) {
  int same = src != NULL && src->kind == AVRO_FIXED && src->logical == AVRO_LOGICAL_DECIMAL &&
             src->precision == precision && src->scale == scale;
  return same ? src->size : 0;
}

/// Builds `node` and its Avro type for the column `s` (`a` its first batch,
/// `src` its type in the stream's Avro schema, if any: names come from it;
/// else from `member`, a union member's full name, if any).
static int build(struct aw_ctx* ctx, const struct ArrowSchema* s, const struct ArrowArray* a,
                 struct aw_node* node, const char* path, const char* column, int depth,
                 const struct avro_node* src, const char* member, json_t** out,
                 struct sluice_error* error) {
  if (depth > AW_MAX_DEPTH) return sl_error_set(error, ENOTSUP, "avro: column '%s' nested too deeply", column);
  SL_RETURN_NOT_OK(sl_type_parse(s->format, &node->type, error));
  node->nullable = (s->flags & ARROW_FLAG_NULLABLE) != 0;
  if (node->type.id != SL_TYPE_DENSE_UNION && node->type.id != SL_TYPE_SPARSE_UNION) {
    src = src_value(src);
  }
  json_t* t = NULL;
  if (s->dictionary != NULL) {
    node->dict = sl_calloc(ctx->alloc, 1, sizeof *node->dict);
    if (node->dict == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory");
    SL_RETURN_NOT_OK(sl_type_parse(s->dictionary->format, &node->dict->type, error));
    enum sl_type_id v = node->dict->type.id, k = node->type.id;
    if (!(k == SL_TYPE_INT8 || k == SL_TYPE_UINT8 || k == SL_TYPE_INT16 || k == SL_TYPE_UINT16 ||
          k == SL_TYPE_INT32 || k == SL_TYPE_UINT32 || k == SL_TYPE_INT64 || k == SL_TYPE_UINT64)) {
      char kn[64], vn[64];
      sl_format_name(s->format, kn, sizeof kn);
      sl_format_name(s->dictionary->format, vn, sizeof vn);
      return sl_error_set(error, ENOTSUP, "avro: column '%s': dictionary<%s, %s> has no Avro "
                          "type (the index is not an integer)", column, kn, vn);
    }
    if (v != SL_TYPE_STRING && v != SL_TYPE_LARGE_STRING) {
      // Other values (a pandas Categorical of integers, say) are written
      // decoded, as their own type; its nulls are the column's (encode).
      SL_RETURN_NOT_OK(build(ctx, s->dictionary, a != NULL ? a->dictionary : NULL, node->dict,
                             path, column, depth + 1, src, member, out, error));
      node->dict->nullable = 0;
      // Values of the null type are "null" already: ["null", "null"] is no
      // Avro union (a pandas Categorical with no categories).
      if (v == SL_TYPE_NA) node->nullable = 0;
      return 0;
    }
    int rc = 0;
    t = try_enum(ctx, node, a != NULL ? a->dictionary : NULL, path,
                 src_name(src, AVRO_ENUM, member), error, &rc);
    if (rc != 0) return rc;
    if (t == NULL && node->en != NULL) return sl_error_set(error, ENOMEM, "avro: out of memory");
    if (t == NULL) t = json_string("string");
  } else {
    char name[64];
    switch (node->type.id) {
      case SL_TYPE_NA:
        node->nullable = 0;
        t = json_string("null");
        break;
      case SL_TYPE_BOOL: t = json_string("boolean"); break;
      case SL_TYPE_INT8: case SL_TYPE_UINT8: case SL_TYPE_INT16: case SL_TYPE_UINT16:
        t = with_arrow_type(json_string("int"), s->format);
        break;
      case SL_TYPE_INT32: t = json_string("int"); break;
      case SL_TYPE_UINT32: case SL_TYPE_UINT64:
        t = with_arrow_type(json_string("long"), s->format);
        break;
      case SL_TYPE_INT64: t = json_string("long"); break;
      case SL_TYPE_HALF_FLOAT: t = with_arrow_type(json_string("float"), "e"); break;
      case SL_TYPE_FLOAT: t = json_string("float"); break;
      case SL_TYPE_DOUBLE: t = json_string("double"); break;
      case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING:
        // A string the source schema has as a uuid stays one (readers such
        // as fastavro give UUID objects for it), its values checked.
        node->uuid = src != NULL && src->kind == AVRO_STRING && src->logical == AVRO_LOGICAL_UUID;
        t = node->uuid ? with_logical("string", "uuid") : json_string("string");
        if (node->type.id == SL_TYPE_LARGE_STRING) t = with_arrow_type(t, "U");
        break;
      case SL_TYPE_BINARY: t = json_string("bytes"); break;
      case SL_TYPE_LARGE_BINARY: t = with_arrow_type(json_string("bytes"), "Z"); break;
      case SL_TYPE_FIXED_SIZE_BINARY:
        t = json_pack("{s:s, s:s, s:I}", "type", "fixed", "name", "", "size",
                      (json_int_t)node->type.byte_width);
        // arrow.uuid: Avro 1.12's uuid over fixed(16) (readers that do not
        // know it read the fixed, as fastavro does)
        if (t != NULL && node->type.byte_width == 16 &&
            sl_metadata_is_extension(s->metadata, "arrow.uuid") &&
            json_object_set_new(t, "logicalType", json_string("uuid")) != 0) {
          json_decref(t);
          t = NULL;
        }
        t = name_type(ctx, t, fixed_name(src, node->type.byte_width, member), path);
        break;
      case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256:
        if (node->type.scale < 0 || node->type.scale > node->type.precision) {
          return sl_error_set(error, ENOTSUP, "avro: column '%s': decimal(%d, %d): Avro's scale "
                              "is 0 to the precision (cast the column first)", column,
                              (int)node->type.precision, (int)node->type.scale);
        }
        node->fixed_size = decimal_fixed_size(src, node->type.precision, node->type.scale);
        if (node->fixed_size > 0) {
          t = name_type(ctx, json_pack("{s:s, s:s, s:I, s:s, s:I, s:I}", "type", "fixed", "name",
                                       "", "size", (json_int_t)node->fixed_size, "logicalType",
                                       "decimal", "precision", (json_int_t)node->type.precision,
                                       "scale", (json_int_t)node->type.scale),
                        fixed_name(src, node->fixed_size, NULL), path);
        } else {
          t = json_pack("{s:s, s:s, s:I, s:I}", "type", "bytes", "logicalType", "decimal",
                        "precision", (json_int_t)node->type.precision, "scale",
                        (json_int_t)node->type.scale);
        }
        break;
      case SL_TYPE_DATE32: t = with_logical("int", "date"); break;
      case SL_TYPE_DATE64: t = with_arrow_type(with_logical("int", "date"), "tdm"); break;
      case SL_TYPE_TIME32:
        t = with_logical("int", "time-millis");
        if (node->type.unit == SL_SECOND) t = with_arrow_type(t, "tts");
        break;
      case SL_TYPE_TIME64: t = with_logical("long", "time-micros"); break;
      case SL_TYPE_TIMESTAMP: {
        const char* unit = node->type.unit == SL_NANO ? "nanos"
                           : node->type.unit == SL_MICRO ? "micros" : "millis";
        snprintf(name, sizeof name, "%stimestamp-%s",
                 node->type.timezone != NULL && node->type.timezone[0] != '\0' ? "" : "local-",
                 unit);
        t = with_logical("long", name);
        const char* zone = node->type.timezone;
        // The reader says UTC (or milliseconds) otherwise.
        if ((zone != NULL && zone[0] != '\0' && strcmp(zone, "UTC") != 0) ||
            node->type.unit == SL_SECOND) {
          t = with_arrow_type(t, s->format);
        }
        break;
      }
      case SL_TYPE_INTERVAL_MONTH_DAY_NANO:
        t = name_type(ctx, json_pack("{s:s, s:s, s:I, s:s}", "type", "fixed", "name", "", "size",
                                     (json_int_t)12, "logicalType", "duration"),
                      fixed_name(src, 12, member), path);
        break;
      case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST: {
        if (s->n_children != 1) return sl_error_set(error, EINVAL, "avro: column '%s': list without an item type", column);
        node->n_children = 1;
        node->children = sl_calloc(ctx->alloc, 1, sizeof *node->children);
        if (node->children == NULL) {
          node->n_children = 0;
          return sl_error_set(error, ENOMEM, "avro: out of memory");
        }
        char sub[512];
        snprintf(sub, sizeof sub, "%.400s_item", path);
        json_t* item = NULL;
        const struct avro_node* items = src != NULL && src->kind == AVRO_ARRAY ? src->items[0] : NULL;
        SL_RETURN_NOT_OK(build(ctx, s->children[0], child_of(a, 0), &node->children[0], sub, column,
                               depth + 1, items, NULL, &item, error));
        if (node->children[0].nullable) item = json_pack("[s, o]", "null", item);
        t = json_pack("{s:s, s:o}", "type", "array", "items", item);
        if (node->type.id != SL_TYPE_LIST) t = with_arrow_type(t, s->format);  // +L, +w:N
        break;
      }
      case SL_TYPE_MAP: {
        const struct ArrowSchema* e = s->n_children == 1 ? s->children[0] : NULL;
        if (e == NULL || e->n_children != 2) return sl_error_set(error, EINVAL, "avro: column '%s': malformed map", column);
        struct sl_type kt;
        SL_RETURN_NOT_OK(sl_type_parse(e->children[0]->format, &kt, error));
        if ((kt.id != SL_TYPE_STRING && kt.id != SL_TYPE_LARGE_STRING) || e->children[0]->dictionary != NULL) {
          const struct ArrowSchema* key = e->children[0];
          char kn[64], vn[64], both[160];
          sl_format_name(key->format, kn, sizeof kn);
          if (key->dictionary != NULL) {
            sl_format_name(key->dictionary->format, vn, sizeof vn);
            snprintf(both, sizeof both, "dictionary<%s, %s>", kn, vn);
          }
          return sl_error_set(error, ENOTSUP, "avro: column '%s': map keys must be strings (are %s)",
                              column, key->dictionary != NULL ? both : kn);
        }
        node->n_children = 2;
        node->children = sl_calloc(ctx->alloc, 2, sizeof *node->children);
        if (node->children == NULL) {
          node->n_children = 0;
          return sl_error_set(error, ENOMEM, "avro: out of memory");
        }
        json_t* kj = NULL;
        SL_RETURN_NOT_OK(build(ctx, e->children[0], child_of(child_of(a, 0), 0), &node->children[0],
                               path, column, depth + 1, NULL, NULL, &kj, error));
        json_decref(kj);
        node->children[0].nullable = 0;
        char sub[512];
        snprintf(sub, sizeof sub, "%.400s_value", path);
        json_t* vj = NULL;
        const struct avro_node* values = src != NULL && src->kind == AVRO_MAP ? src->items[0] : NULL;
        SL_RETURN_NOT_OK(build(ctx, e->children[1], child_of(child_of(a, 0), 1), &node->children[1],
                               sub, column, depth + 1, values, NULL, &vj, error));
        if (node->children[1].nullable) vj = json_pack("[s, o]", "null", vj);
        t = json_pack("{s:s, s:o}", "type", "map", "values", vj);
        // Avro's keys are strings: large ones are noted for sluice's reader.
        if (t != NULL && kt.id == SL_TYPE_LARGE_STRING)
          json_object_set_new(t, "sluice.arrow_key_type", json_string("U"));
        break;
      }
      case SL_TYPE_STRUCT:
        SL_RETURN_NOT_OK(build_record(ctx, s, a, node, path, column, depth, src, member, &t,
                                      error));
        break;
      case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION:
        // No validity bitmap: nulls are the members'.
        node->nullable = 0;
        SL_RETURN_NOT_OK(build_union(ctx, s, a, node, path, column, depth, src, &t, error));
        break;
      default: {
        char tn[64];
        sl_type_name(&node->type, tn, sizeof tn);
        return sl_error_set(error, ENOTSUP, "avro: column '%s': type %s has no Avro mapping",
                            column, tn);
      }
    }
  }
  if (t == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory");
  *out = t;
  return 0;
}

/* ---- Values ------------------------------------------------------------------ */

static int is_null(const struct ArrowArray* a, int64_t p) {
  if (a->null_count == 0 || a->n_buffers == 0 || a->buffers[0] == NULL) return 0;
  const uint8_t* v = a->buffers[0];
  return !((v[p >> 3] >> (p & 7)) & 1);
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        exp--;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static int value_error(struct aw_ctx* ctx, int code, const char* what, struct sluice_error* error) {
  return sl_error_set(error, code, "avro: column '%s' row %" PRId64 ": %s", ctx->column, ctx->row, what);
}

static int encode(struct aw_ctx* ctx, const struct aw_node* node, const struct ArrowArray* a,
                  int64_t j, struct sluice_error* error);

/// A decimal value with more digits than its column's precision, named.
static int decimal_error(struct aw_ctx* ctx, const struct aw_node* node, const uint8_t* le,
                         int width, struct sluice_error* error) {
  struct sl_text value;
  sl_text_init(&value, ctx->alloc);
  int rc = sl_text_append_decimal(&value, le, width, node->type.scale);
  rc = sl_error_set(error, ERANGE, "avro: column '%s' row %" PRId64 ": decimal value %s has "
                    "more digits than the column's precision %d (decimal(%d, %d); cast the "
                    "column to a wider decimal first)", ctx->column, ctx->row,
                    rc == 0 ? sl_text_cstr(&value) : "?", (int)node->type.precision,
                    (int)node->type.precision, (int)node->type.scale);
  sl_text_reset(&value);
  return rc;
}

/// Rows and array or map items between polls of the sink for a cancelled
/// write (Ctrl-C). The sink polls per MiB it writes, but values may take no
/// bytes at all: 2^40 rows of a null column ignored SIGTERM for minutes.
#define AW_POLL_VALUES 65536

/// Counts one row or item; every AW_POLL_VALUES, ECANCELED if the write was cancelled.
static int aw_poll(struct aw_ctx* ctx, struct sluice_error* error) {
  if (--ctx->poll_left > 0) return 0;
  ctx->poll_left = AW_POLL_VALUES;
  return sl_sink_cancelled(ctx->sink, error);
}

static int encode_string_at(struct aw_ctx* ctx, enum sl_type_id id, const struct ArrowArray* a,
                            int64_t p, struct sluice_error* error) {
  const uint8_t* data = a->buffers[2];
  int64_t start, end;
  if (id == SL_TYPE_LARGE_STRING || id == SL_TYPE_LARGE_BINARY) {
    start = ((const int64_t*)a->buffers[1])[p];
    end = ((const int64_t*)a->buffers[1])[p + 1];
  } else {
    start = ((const int32_t*)a->buffers[1])[p];
    end = ((const int32_t*)a->buffers[1])[p + 1];
  }
  return put_counted(ctx, data + start, end - start, error);
}

static int encode_items(struct aw_ctx* ctx, const struct aw_node* item, const struct ArrowArray* child,
                        int64_t start, int64_t end, struct sluice_error* error) {
  if (end > start) {
    SL_RETURN_NOT_OK(put_long(ctx, end - start, error));
    // Doubles and floats are their little-endian IEEE bytes in Avro too: on a
    // little-endian host a block of them without nulls is one copy, or, where
    // the items are nullable (["null", "double"]), the branch byte and the
    // value per item without a call each (W2's arrays).
    int id = item->type.id;
    if (AW_LITTLE_ENDIAN && item->dict == NULL && (id == SL_TYPE_DOUBLE || id == SL_TYPE_FLOAT) &&
        (child->null_count == 0 || child->n_buffers == 0 || child->buffers[0] == NULL)) {
      size_t w = id == SL_TYPE_DOUBLE ? 8 : 4;
      size_t n = (size_t)(end - start);
      const uint8_t* values = (const uint8_t*)child->buffers[1] + (size_t)(child->offset + start) * w;
      if (!item->nullable) {
        SL_RETURN_NOT_OK(put_bytes(ctx, values, n * w, error));
      } else {
        SL_RETURN_NOT_OK(buf_reserve(ctx, n * (w + 1), error));
        uint8_t* out = ctx->data.data + ctx->data.size;
        for (size_t k = 0; k < n; ++k, out += w + 1, values += w) {
          out[0] = 2;  // zigzag(1): the non-null branch
          memcpy(out + 1, values, w);
        }
        ctx->data.size += n * (w + 1);
      }
    } else {
      for (int64_t k = start; k < end; ++k) {
        SL_RETURN_NOT_OK(aw_poll(ctx, error));
        SL_RETURN_NOT_OK(encode(ctx, item, child, k, error));
      }
    }
  }
  return put_long(ctx, 0, error);
}

static int encode(struct aw_ctx* ctx, const struct aw_node* node, const struct ArrowArray* a,
                  int64_t j, struct sluice_error* error) {
  if (node->type.id == SL_TYPE_NA && node->dict == NULL) return 0;
  if (node->dict != NULL && node->dict->type.id == SL_TYPE_NA) return 0;  // "null": no bytes
  const int64_t p = a->offset + j;
  // Unions have no validity bitmap (buffers[0] is the type ids).
  int null = node->type.id == SL_TYPE_DENSE_UNION || node->type.id == SL_TYPE_SPARSE_UNION
                 ? 0 : is_null(a, p);
  int64_t k = 0;  // the dictionary index
  if (node->dict != NULL && !null) {
    // A uint64 index above INT64_MAX reads as negative.
    k = sl_int_value(node->type.id, a->buffers[1], p);
    const struct ArrowArray* d = a->dictionary;
    if (d == NULL || k < 0 || k >= d->length) {
      return value_error(ctx, EINVAL, "dictionary index out of range", error);
    }
    null = is_null(d, d->offset + k);  // a null dictionary value is a null
  }
  if (node->nullable) {
    SL_RETURN_NOT_OK(put_long(ctx, null ? 0 : 1, error));
    if (null) return 0;
  } else if (null) {
    return value_error(ctx, EINVAL, "null in a field that is not nullable", error);
  }
  uint8_t tmp[32];
  if (node->dict != NULL) {
    const struct ArrowArray* d = a->dictionary;
    if (node->en != NULL) {
      struct aw_enum* en = node->en;
      if (en->gen != ctx->gen) {
        if (en->map != NULL) sl_free(ctx->alloc, en->map, (size_t)en->map_len * sizeof(int32_t));
        en->map_len = 0;
        en->map = sl_alloc(ctx->alloc, (size_t)d->length * sizeof(int32_t));
        if (en->map == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory");
        en->map_len = d->length;
        for (int64_t i = 0; i < d->length; ++i) {
          const uint8_t* sp;
          int64_t sn;
          en->map[i] = -1;
          if (is_null(d, d->offset + i)) continue;
          string_at(node->dict->type.id, d, d->offset + i, &sp, &sn);
          json_t* pos = json_object_getn(en->index, (const char*)sp, (size_t)sn);
          if (pos != NULL) en->map[i] = (int32_t)json_integer_value(pos);
        }
        en->gen = ctx->gen;
      }
      if (en->map[k] < 0) {
        // EDOM: the callers that can read the input again write it again
        // with enums=false (sluice.h, sluice_write).
        return value_error(ctx, EDOM, "value is not one of the enum's symbols (the first "
                           "batch's dictionary values; the Avro write option enums=false "
                           "writes the column as strings)", error);
      }
      return put_long(ctx, en->map[k], error);
    }
    enum sl_type_id v = node->dict->type.id;
    if (v == SL_TYPE_STRING || v == SL_TYPE_LARGE_STRING)
      return encode_string_at(ctx, v, d, d->offset + k, error);
    return encode(ctx, node->dict, d, k, error);  // the value, decoded
  }
  switch (node->type.id) {
    case SL_TYPE_BOOL: {
      const uint8_t* v = a->buffers[1];
      tmp[0] = (uint8_t)((v[p >> 3] >> (p & 7)) & 1);
      return put_bytes(ctx, tmp, 1, error);
    }
    case SL_TYPE_INT8: case SL_TYPE_UINT8: case SL_TYPE_INT16: case SL_TYPE_UINT16:
    case SL_TYPE_INT32: case SL_TYPE_UINT32: case SL_TYPE_INT64: case SL_TYPE_UINT64: {
      int64_t v = sl_int_value(node->type.id, a->buffers[1], p);
      if (node->type.id == SL_TYPE_UINT64 && v < 0) {  // above INT64_MAX
        return value_error(ctx, ERANGE, "uint64 value above INT64_MAX does not fit an Avro long", error);
      }
      return put_long(ctx, v, error);
    }
    case SL_TYPE_HALF_FLOAT: {
      float f = half_to_float(((const uint16_t*)a->buffers[1])[p]);
      uint32_t bits;
      memcpy(&bits, &f, 4);
      for (int i = 0; i < 4; ++i) tmp[i] = (uint8_t)(bits >> (8 * i));
      return put_bytes(ctx, tmp, 4, error);
    }
    case SL_TYPE_FLOAT: case SL_TYPE_DOUBLE: {
      size_t w = node->type.id == SL_TYPE_FLOAT ? 4 : 8;
      uint64_t bits = 0;
      if (w == 4) {
        uint32_t b32;
        memcpy(&b32, (const uint8_t*)a->buffers[1] + (size_t)p * 4, 4);
        bits = b32;
      } else {
        memcpy(&bits, (const uint8_t*)a->buffers[1] + (size_t)p * 8, 8);
      }
      for (size_t i = 0; i < w; ++i) tmp[i] = (uint8_t)(bits >> (8 * i));
      return put_bytes(ctx, tmp, w, error);
    }
    case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING: case SL_TYPE_BINARY: case SL_TYPE_LARGE_BINARY:
      if (node->uuid) {
        const uint8_t* sp;
        int64_t sn;
        string_at(node->type.id, a, p, &sp, &sn);
        uint8_t bytes[16];
        if (sn != 36 || !sl_parse_uuid(sp, sn, bytes)) {  // (the spec's form only)
          return value_error(ctx, EINVAL, "value is not a UUID (8-4-4-4-12 hex digits), "
                             "which the column's logicalType uuid (from the source's Avro "
                             "schema) requires", error);
        }
      }
      return encode_string_at(ctx, node->type.id, a, p, error);
    case SL_TYPE_FIXED_SIZE_BINARY: {
      size_t w = (size_t)node->type.byte_width;
      return put_bytes(ctx, (const uint8_t*)a->buffers[1] + (size_t)p * w, w, error);
    }
    case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256: {
      size_t w = node->type.id == SL_TYPE_DECIMAL128 ? 16 : 32;
      const uint8_t* le = (const uint8_t*)a->buffers[1] + (size_t)p * w;
      // Readers take the schema's precision as a bound (sluice's refuses a
      // longer value, fastavro reads 128.10 in decimal(3, 2) as 128): a
      // value past it would read back as an error or another number. Even
      // at 38 (76) digits: 2^127 (2^255) is past 10^38 (10^76).
      if (!sl_decimal_fits(le, (int)w, node->type.precision)) {
        return decimal_error(ctx, node, le, (int)w, error);
      }
      // Big-endian, then drop leading bytes that only repeat the sign.
      for (size_t i = 0; i < w; ++i) tmp[i] = le[w - 1 - i];
      size_t s = 0;
      while (s + 1 < w && ((tmp[s] == 0x00 && !(tmp[s + 1] & 0x80)) ||
                           (tmp[s] == 0xff && (tmp[s + 1] & 0x80)))) {
        s++;
      }
      if (node->fixed_size == 0) return put_counted(ctx, tmp + s, (int64_t)(w - s), error);
      // A fixed: sign-extended to its size, which must hold the value.
      size_t n = (size_t)node->fixed_size;
      if (w - s > n) {
        return value_error(ctx, ERANGE, "decimal value does not fit the column's Avro fixed "
                           "(more digits than its precision)", error);
      }
      SL_RETURN_NOT_OK(buf_reserve(ctx, n, error));
      memset(ctx->data.data + ctx->data.size, (tmp[s] & 0x80) ? 0xff : 0x00, n - (w - s));
      ctx->data.size += n - (w - s);
      return put_bytes(ctx, tmp + s, w - s, error);
    }
    case SL_TYPE_DATE32: return put_long(ctx, ((const int32_t*)a->buffers[1])[p], error);
    case SL_TYPE_DATE64: {
      int64_t ms = ((const int64_t*)a->buffers[1])[p];
      if (ms % 86400000 != 0) return value_error(ctx, EINVAL, "date64 value is not a whole day", error);
      int64_t d = ms / 86400000;
      if (d < INT32_MIN || d > INT32_MAX) return value_error(ctx, ERANGE, "date out of Avro int range", error);
      return put_long(ctx, d, error);
    }
    case SL_TYPE_TIME32: {
      int64_t v = ((const int32_t*)a->buffers[1])[p];
      if (node->type.unit == SL_SECOND) v *= 1000;
      // Readers (sluice's, fastavro) refuse a time-millis outside the day.
      if (v < 0 || v >= 86400000)
        return value_error(ctx, ERANGE, "time32 value is not a time of day (00:00 to 24:00)", error);
      return put_long(ctx, v, error);
    }
    case SL_TYPE_TIME64: {
      int64_t v = ((const int64_t*)a->buffers[1])[p];
      if (node->type.unit == SL_NANO) {
        if (v % 1000 != 0) return value_error(ctx, EINVAL, "time64[ns] value is not whole microseconds (Avro has time-micros)", error);
        v /= 1000;
      }
      if (v < 0 || v >= INT64_C(86400000000))
        return value_error(ctx, ERANGE, "time64 value is not a time of day (00:00 to 24:00)", error);
      return put_long(ctx, v, error);
    }
    case SL_TYPE_TIMESTAMP: {
      int64_t v = ((const int64_t*)a->buffers[1])[p];
      if (node->type.unit == SL_SECOND) {
        if (v > INT64_MAX / 1000 || v < INT64_MIN / 1000) return value_error(ctx, ERANGE, "timestamp[s] overflows milliseconds", error);
        v *= 1000;
      }
      return put_long(ctx, v, error);
    }
    case SL_TYPE_INTERVAL_MONTH_DAY_NANO: {
      const uint8_t* e = (const uint8_t*)a->buffers[1] + (size_t)p * 16;
      int32_t months, days;
      int64_t nanos;
      memcpy(&months, e, 4);
      memcpy(&days, e + 4, 4);
      memcpy(&nanos, e + 8, 8);
      if (months < 0 || days < 0 || nanos < 0) return value_error(ctx, ERANGE, "negative interval has no Avro duration", error);
      if (nanos % 1000000 != 0) return value_error(ctx, EINVAL, "interval nanoseconds are not whole milliseconds (Avro duration)", error);
      int64_t ms = nanos / 1000000;
      if (ms > UINT32_MAX) return value_error(ctx, ERANGE, "interval milliseconds do not fit 32 bits", error);
      uint32_t parts[3] = {(uint32_t)months, (uint32_t)days, (uint32_t)ms};
      for (int k = 0; k < 3; ++k)
        for (int i = 0; i < 4; ++i) tmp[k * 4 + i] = (uint8_t)(parts[k] >> (8 * i));
      return put_bytes(ctx, tmp, 12, error);
    }
    case SL_TYPE_LIST:
      return encode_items(ctx, &node->children[0], a->children[0], ((const int32_t*)a->buffers[1])[p],
                          ((const int32_t*)a->buffers[1])[p + 1], error);
    case SL_TYPE_LARGE_LIST:
      return encode_items(ctx, &node->children[0], a->children[0], ((const int64_t*)a->buffers[1])[p],
                          ((const int64_t*)a->buffers[1])[p + 1], error);
    case SL_TYPE_FIXED_SIZE_LIST: {
      int64_t n = node->type.list_size;
      return encode_items(ctx, &node->children[0], a->children[0], p * n, p * n + n, error);
    }
    case SL_TYPE_MAP: {
      const int32_t* off = a->buffers[1];
      int64_t start = off[p], end = off[p + 1];
      const struct ArrowArray* e = a->children[0];
      if (end > start) {
        SL_RETURN_NOT_OK(put_long(ctx, end - start, error));
        for (int64_t k = start; k < end; ++k) {
          SL_RETURN_NOT_OK(aw_poll(ctx, error));
          int64_t ep = e->offset + k;
          SL_RETURN_NOT_OK(encode(ctx, &node->children[0], e->children[0], ep, error));
          SL_RETURN_NOT_OK(encode(ctx, &node->children[1], e->children[1], ep, error));
        }
      }
      return put_long(ctx, 0, error);
    }
    case SL_TYPE_STRUCT:
      for (int64_t c = 0; c < node->n_children; ++c) {
        SL_RETURN_NOT_OK(encode(ctx, &node->children[c], a->children[c], p, error));
      }
      return 0;
    case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION: {
      int8_t id = ((const int8_t*)a->buffers[0])[p];
      int64_t c = 0;
      while (c < node->type.n_type_codes && node->type.type_codes[c] != id) c++;
      if (c >= node->type.n_type_codes || c >= node->n_children) {
        return value_error(ctx, EINVAL, "union type id not in the union's type codes", error);
      }
      int64_t k = node->type.id == SL_TYPE_DENSE_UNION ? ((const int32_t*)a->buffers[1])[p] : p;
      const struct ArrowArray* child = a->children[c];
      const struct aw_node* member = &node->children[c];
      if (member->type.id == SL_TYPE_NA || is_null(child, child->offset + k)) {
        if (node->null_branch < 0) return value_error(ctx, EINVAL, "null union member and no null branch", error);
        return put_long(ctx, node->null_branch, error);
      }
      SL_RETURN_NOT_OK(put_long(ctx, c + node->branch_shift, error));
      return encode(ctx, member, child, k, error);
    }
    default:
      return value_error(ctx, ENOTSUP, "type has no Avro encoding", error);
  }
}

/* ---- Container ------------------------------------------------------------- */

/// Writes one block: its object count, its (compressed) bytes, the sync marker.
static int emit_block(const struct aw_ctx* ctx, int64_t count, const struct avro_buf* packed,
                      struct sl_sink* sink, struct sluice_error* error) {
  uint8_t head[20];
  size_t n = zigzag(count, head);
  n += zigzag((int64_t)packed->size, head + n);
  SL_RETURN_NOT_OK(sl_sink_write(sink, head, (int64_t)n, error));
  SL_RETURN_NOT_OK(sl_sink_write(sink, packed->data, (int64_t)packed->size, error));
  return sl_sink_write(sink, ctx->sync, 16, error);
}

/// With a codec, worker threads compress blocks while the caller encodes the
/// next ones (compressing is most of a compressed write), each block written
/// in turn, so the file is the one a single thread would write. A block's
/// buffer is swapped with a free slot's, never copied.
#define AW_MAX_WORKERS 8
enum aw_slot_state { AW_SLOT_FREE, AW_SLOT_FULL, AW_SLOT_WORKING };
struct aw_slot {
  struct aw_buf data;
  int64_t count, seq;
  enum aw_slot_state state;
};
struct aw_pipe {
  const struct aw_ctx* ctx;
  struct sl_sink* sink;
  pthread_t threads[AW_MAX_WORKERS];
  int n_threads;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct aw_slot slots[AW_MAX_WORKERS];
  struct avro_buf packed[AW_MAX_WORKERS];  ///< one per worker
  int64_t next_seq;    ///< given to the next block handed over
  int64_t next_write;  ///< the block whose turn it is to be written
  int done;
  int rc;              ///< the first error (then blocks are only drained)
  struct sluice_error error;
  int started;         ///< workers started so far (each takes its packed index)
};

static void* pipe_worker(void* arg) {
  struct aw_pipe* p = arg;
  pthread_mutex_lock(&p->lock);
  int me = p->started++;
  for (;;) {
    struct aw_slot* slot = NULL;
    for (;;) {
      for (int i = 0; i < p->n_threads; ++i) {
        struct aw_slot* s = &p->slots[i];
        if (s->state == AW_SLOT_FULL && (slot == NULL || s->seq < slot->seq)) slot = s;
      }
      if (slot != NULL || p->done) break;
      pthread_cond_wait(&p->cond, &p->lock);
    }
    if (slot == NULL) break;
    slot->state = AW_SLOT_WORKING;
    int failed = p->rc != 0;
    pthread_mutex_unlock(&p->lock);
    struct sluice_error err;
    memset(&err, 0, sizeof err);
    int rc = 0;
    if (!failed) {
      rc = sl_avro_compress(p->ctx->codec, p->ctx->level, slot->data.data, slot->data.size,
                         &p->packed[me], p->ctx->alloc, &err);
    }
    pthread_mutex_lock(&p->lock);
    while (p->next_write != slot->seq) pthread_cond_wait(&p->cond, &p->lock);
    if (rc == 0 && p->rc == 0) {
      // Its turn: only this worker writes now, the others wait for next_write.
      pthread_mutex_unlock(&p->lock);
      rc = emit_block(p->ctx, slot->count, &p->packed[me], p->sink, &err);
      pthread_mutex_lock(&p->lock);
    }
    if (rc != 0 && p->rc == 0) {
      p->rc = rc;
      p->error = err;
    }
    p->next_write++;
    slot->data.size = 0;
    slot->state = AW_SLOT_FREE;
    pthread_cond_broadcast(&p->cond);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/// Starts the workers (one per core, at most AW_MAX_WORKERS); 0 when none
/// could start (the caller then writes blocks itself).
static int pipe_start(struct aw_pipe* p, const struct aw_ctx* ctx, struct sl_sink* sink) {
  memset(p, 0, sizeof *p);
  p->ctx = ctx;
  p->sink = sink;
  int want = sl_cores(AW_MAX_WORKERS);
  if (pthread_mutex_init(&p->lock, NULL) != 0) return 0;
  if (pthread_cond_init(&p->cond, NULL) != 0) {
    pthread_mutex_destroy(&p->lock);
    return 0;
  }
  p->n_threads = want;  // workers read it under the lock
  pthread_mutex_lock(&p->lock);
  int started = 0;
  for (int i = 0; i < want; ++i) {
    if (pthread_create(&p->threads[i], NULL, pipe_worker, p) != 0) break;
    started++;
  }
  p->n_threads = started;
  pthread_mutex_unlock(&p->lock);
  if (started == 0) {
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
    return 0;
  }
  return 1;
}

/// Hands the encoder's full block to a free slot and takes the slot's empty
/// buffer in exchange.
static int pipe_hand(struct aw_pipe* p, struct aw_buf* data, int64_t count,
                     struct sluice_error* error) {
  pthread_mutex_lock(&p->lock);
  struct aw_slot* slot = NULL;
  while (p->rc == 0) {
    for (int i = 0; i < p->n_threads && slot == NULL; ++i)
      if (p->slots[i].state == AW_SLOT_FREE) slot = &p->slots[i];
    if (slot != NULL) break;
    pthread_cond_wait(&p->cond, &p->lock);
  }
  int rc = p->rc;
  if (rc == 0) {
    struct aw_buf t = slot->data;
    slot->data = *data;
    *data = t;
    data->size = 0;
    slot->count = count;
    slot->seq = p->next_seq++;
    slot->state = AW_SLOT_FULL;
    pthread_cond_broadcast(&p->cond);
  } else if (error != NULL) {
    *error = p->error;
  }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

/// Waits for the workers to write what they were given; frees their buffers.
static int pipe_finish(struct aw_pipe* p, const struct sluice_allocator* alloc, int rc,
                       struct sluice_error* error) {
  pthread_mutex_lock(&p->lock);
  p->done = 1;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  for (int i = 0; i < p->n_threads; ++i) pthread_join(p->threads[i], NULL);
  if (rc == 0 && p->rc != 0) {
    rc = p->rc;
    if (error != NULL) *error = p->error;
  }
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
  for (int i = 0; i < AW_MAX_WORKERS; ++i) {
    if (p->slots[i].data.data != NULL) sl_free_buffer(alloc, p->slots[i].data.data, p->slots[i].data.cap);
    sl_avro_buf_release(&p->packed[i], alloc);
  }
  return rc;
}

static int flush_block(struct aw_ctx* ctx, struct aw_pipe* pipe, int64_t count,
                       struct sl_sink* sink, struct sluice_error* error) {
  if (count == 0) return 0;
  if (pipe != NULL) return pipe_hand(pipe, &ctx->data, count, error);
  SL_RETURN_NOT_OK(sl_avro_compress(ctx->codec, ctx->level, ctx->data.data, ctx->data.size,
                                 &ctx->packed, ctx->alloc, error));
  SL_RETURN_NOT_OK(emit_block(ctx, count, &ctx->packed, sink, error));
  ctx->data.size = 0;
  return 0;
}


static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}


/// A codec named in the write options: an unknown name is the caller's
/// mistake (EINVAL), where in a file's header it is a codec not supported.
static int writer_codec(const char* name, size_t n, enum avro_codec* out,
                        struct sluice_error* error) {
  if (sl_avro_codec_from_name(name, n, out, error) == 0) return 0;
  if (error == NULL) return EINVAL;
  char why[sizeof error->message];
  memcpy(why, error->message, sizeof why);
  why[sizeof why - 1] = '\0';
  return sl_error_set(error, EINVAL, "%.400s (known: null, deflate, snappy, zstandard, bzip2, xz, lzma)",
                      why);
}
/// A level the codec has, or none (AVRO_LEVEL_DEFAULT): a level it lacks,
/// or one out of its range, would be ignored or clamped by sl_avro_compress, so
/// it is refused. zstandard's range is fastavro's and Java's, its negative
/// levels the fastest.
static int check_level(enum avro_codec codec, int level, struct sluice_error* error) {
  static const struct {
    const char* name;
    int min, max;  // max < 0: no levels
  } k_levels[] = {[AVRO_CODEC_NULL] = {"null", 0, -1},       [AVRO_CODEC_DEFLATE] = {"deflate", 0, 12},
                  [AVRO_CODEC_SNAPPY] = {"snappy", 0, -1},   [AVRO_CODEC_ZSTD] = {"zstandard", -131072, 22},
                  [AVRO_CODEC_BZIP2] = {"bzip2", 1, 9},      [AVRO_CODEC_XZ] = {"xz", 0, 9},
                  [AVRO_CODEC_LZMA] = {"lzma", 0, 9}};
  if (level == AVRO_LEVEL_DEFAULT) return 0;
  if ((size_t)codec >= sizeof k_levels / sizeof k_levels[0]) return 0;
  if (k_levels[codec].max < 0) {
    return sl_error_set(error, EINVAL, "Avro write option level=%d: codec %s has no compression "
                        "levels (deflate, zstandard, bzip2, xz and lzma have)", level,
                        k_levels[codec].name);
  }
  if (level < k_levels[codec].min || level > k_levels[codec].max) {
    return sl_error_set(error, EINVAL, "Avro write option level=%d: codec %s takes %d..%d", level,
                        k_levels[codec].name, k_levels[codec].min, k_levels[codec].max);
  }
  return 0;
}

static int parse_options(struct aw_ctx* ctx, const struct sl_write_args* args, struct sluice_error* error) {
  ctx->codec = AVRO_CODEC_NULL;
  ctx->level = AVRO_LEVEL_DEFAULT;
  ctx->block_size = AW_DEFAULT_BLOCK;
  int have_codec = 0;
  const char* codec_text = "";  // as -W codec= gave it
  size_t codec_len = 0;
  const char* options = args->format_options;
  struct sl_option o;
  int more;
  while ((more = sl_option_next(&options, &o)) != 0) {
    if (more < 0) {
      return sl_error_set(error, EINVAL, "Avro write option '%.*s': expected key=value (known: codec, level, block_size, sync, enums)",
                          (int)o.key_len, o.key);
    }
    size_t vn = o.value_len;
    const char* v = o.value;
    int64_t number;
    if (sl_option_is(&o, "codec")) {
      SL_RETURN_NOT_OK(writer_codec(v, vn, &ctx->codec, error));
      have_codec = 1;
      codec_text = v;
      codec_len = vn;
    } else if (sl_option_is(&o, "level")) {
      if (sl_parse_int64(v, vn, INT32_MIN + 1, INT32_MAX, &number) != 0) return sl_error_set(error, EINVAL, "Avro write option level='%.*s': expected a level of the codec (deflate 0..12, zstandard -131072..22, bzip2 1..9, xz and lzma 0..9)", (int)vn, v);
      ctx->level = (int)number;
    } else if (sl_option_is(&o, "block_size") || sl_option_is(&o, "sync_interval")) {
      if (sl_parse_size(v, vn, 1, INT64_C(1) << 30, &number) != 0) return sl_error_set(error, EINVAL, "Avro write option block_size='%.*s': expected 1 byte to 1g (k, m, g suffixes)", (int)vn, v);
      ctx->block_size = (size_t)number;
    } else if (sl_option_is(&o, "enums")) {
      int enums;
      if (sl_option_true_false(&o, &enums) != 0) return sl_error_set(error, EINVAL, "Avro write option enums='%.*s': expected true or false", (int)vn, v);
      ctx->no_enums = !enums;
    } else if (sl_option_is(&o, "sync")) {
      if (vn != 32) return sl_error_set(error, EINVAL, "Avro write option sync: expected 32 hex digits");
      for (int i = 0; i < 16; ++i) {
        int h = hexval(v[2 * i]), l = hexval(v[2 * i + 1]);
        if (h < 0 || l < 0) return sl_error_set(error, EINVAL, "Avro write option sync: expected 32 hex digits");
        ctx->sync[i] = (uint8_t)(h * 16 + l);
      }
      ctx->have_sync = 1;
    } else {
      return sl_error_set(error, EINVAL, "unknown Avro write option '%.*s' (known: codec, level, block_size, sync, enums)", (int)o.key_len, o.key);
    }
  }
  if (args->compression != NULL && args->compression[0] != '\0') {
    const char* c = strcmp(args->compression, "zstd") == 0    ? "zstandard"
                    : strcmp(args->compression, "none") == 0 ? "null"
                                                              : args->compression;
    enum avro_codec flag;
    SL_RETURN_NOT_OK(writer_codec(c, strlen(c), &flag, error));
    // Both ways of naming it must agree: neither silently wins.
    if (have_codec && flag != ctx->codec) {
      return sl_error_set(error, EINVAL, "Avro writer: compression '%s' and codec=%.*s name "
                          "different codecs: give one", args->compression, (int)codec_len,
                          codec_text);
    }
    ctx->codec = flag;
  }
  return check_level(ctx->codec, ctx->level, error);
}

static int random_sync(uint8_t* out, struct sluice_error* error) {
  FILE* f = fopen("/dev/urandom", "rb");
  if (f == NULL) return sl_error_set(error, errno ? errno : EIO, "avro: cannot open /dev/urandom for the sync marker");
  size_t got = fread(out, 1, 16, f);
  fclose(f);
  if (got != 16) return sl_error_set(error, EIO, "avro: short read from /dev/urandom");
  return 0;
}

/// Whether a key of the table's schema metadata goes into the header as it
/// is: not Avro's own (avro.schema, avro.codec are written afresh) nor what
/// sluice notes on reading (sluice.warning).
static int header_key(const char* k, int32_t kn) {
  return !(kn >= 5 && memcmp(k, "avro.", 5) == 0) && !(kn >= 7 && memcmp(k, "sluice.", 7) == 0);
}

/// Whether `name`, a column name in pandas' metadata, is the top-level column
/// `i` that was renamed; then its Avro name is root->children[i].field_name.
static int renamed_column(const struct ArrowSchema* schema, const struct aw_node* root,
                          const char* name, int64_t* i) {
  for (*i = 0; *i < schema->n_children && *i < root->n_children; ++*i) {
    const char* was = schema->children[*i]->name ? schema->children[*i]->name : "";
    if (strcmp(was, name) == 0) return strcmp(was, root->children[*i].field_name) != 0;
  }
  return 0;
}

/// pandas' metadata ("pandas": index_columns, columns[].field_name) with the
/// columns it names under their Avro names, so that the index comes back.
/// *text: jansson's (free()), or NULL when nothing was renamed or the value
/// is not JSON (kept as it is).
static int pandas_renamed(const struct ArrowSchema* schema, const struct aw_node* root,
                          const char* v, int32_t vn, char** text, struct sluice_error* error) {
  *text = NULL;
  json_t* meta = json_loadb(v, (size_t)vn, 0, NULL);
  json_t* index = json_object_get(meta, "index_columns");
  json_t* columns = json_object_get(meta, "columns");
  int changed = 0, failed = 0;
  size_t k;
  json_t* e;
  int64_t i;
  json_array_foreach(index, k, e) {
    if (json_is_string(e) && renamed_column(schema, root, json_string_value(e), &i)) {
      failed |= json_array_set_new(index, k, json_string(root->children[i].field_name));
      changed = 1;
    }
  }
  json_array_foreach(columns, k, e) {
    json_t* f = json_object_get(e, "field_name");
    if (json_is_string(f) && renamed_column(schema, root, json_string_value(f), &i)) {
      failed |= json_object_set_new(e, "field_name", json_string(root->children[i].field_name));
      changed = 1;
    }
  }
  if (changed && !failed) {
    *text = json_dumps(meta, JSON_COMPACT | JSON_PRESERVE_ORDER);
    failed = *text == NULL;
  }
  json_decref(meta);
  return failed ? sl_error_set(error, ENOMEM, "avro: out of memory") : 0;
}

/// The header: schema, codec, then the table's own schema metadata (pandas'
/// index description, say), which readers that know the keys use and the
/// others skip; sluice's reader gives them back as schema metadata.
static int write_header(struct aw_ctx* ctx, const char* schema_json,
                        const struct ArrowSchema* schema, const struct aw_node* root,
                        struct sl_sink* sink, struct sluice_error* error) {
  static const char* const k_codec_names[] = {"null", "deflate", "snappy", "zstandard", "bzip2", "xz",
                                              "lzma"};
  const char* codec = k_codec_names[ctx->codec];
  struct sl_metadata_iter it;
  const char *k, *v;
  int32_t kn, vn, n_user = 0;
  sl_metadata_iter_init(&it, schema->metadata);
  while (sl_metadata_iter_next(&it, &k, &kn, &v, &vn)) n_user += header_key(k, kn);
  SL_RETURN_NOT_OK(put_bytes(ctx, "Obj\x01", 4, error));
  SL_RETURN_NOT_OK(put_long(ctx, 2 + n_user, error));
  SL_RETURN_NOT_OK(put_counted(ctx, "avro.schema", 11, error));
  SL_RETURN_NOT_OK(put_counted(ctx, schema_json, (int64_t)strlen(schema_json), error));
  SL_RETURN_NOT_OK(put_counted(ctx, "avro.codec", 10, error));
  SL_RETURN_NOT_OK(put_counted(ctx, codec, (int64_t)strlen(codec), error));
  sl_metadata_iter_init(&it, schema->metadata);
  while (sl_metadata_iter_next(&it, &k, &kn, &v, &vn)) {
    if (!header_key(k, kn)) continue;
    SL_RETURN_NOT_OK(put_counted(ctx, k, kn, error));
    // pandas' index columns by the names they have in the file
    char* renamed = NULL;
    if (kn == 6 && memcmp(k, "pandas", 6) == 0) {
      SL_RETURN_NOT_OK(pandas_renamed(schema, root, v, vn, &renamed, error));
    }
    int rc = renamed != NULL ? put_counted(ctx, renamed, (int64_t)strlen(renamed), error)
                             : put_counted(ctx, v, vn, error);
    free(renamed);
    SL_RETURN_NOT_OK(rc);
  }
  SL_RETURN_NOT_OK(put_long(ctx, 0, error));
  SL_RETURN_NOT_OK(put_bytes(ctx, ctx->sync, 16, error));
  SL_RETURN_NOT_OK(sl_sink_write(sink, ctx->data.data, (int64_t)ctx->data.size, error));
  ctx->data.size = 0;
  return 0;
}

/// An open Avro writer (the push interface). The header waits for the first
/// batch, whose dictionaries give the symbols of enums.
struct avro_writer {
  struct aw_ctx ctx;
  struct sl_sink* sink;
  struct ArrowSchema schema;
  struct aw_node root;
  int header_written;
  int64_t in_block;  ///< rows in ctx.data not yet handed on as a block
  struct aw_pipe pipe;
  int pipe_on;  ///< the compressing workers run (till the row group ends)
};

static int stop_pipe(struct avro_writer* w, int rc, struct sluice_error* error) {
  if (!w->pipe_on) return rc;
  w->pipe_on = 0;
  return pipe_finish(&w->pipe, w->ctx.alloc, rc, error);
}

static void avro_close(void* state) {
  struct avro_writer* w = state;
  if (w == NULL) return;
  stop_pipe(w, EINTR, NULL);  // after an error: what it holds goes to an aborted sink
  json_decref(w->ctx.names);
  node_reset(w->ctx.alloc, &w->root);
  if (w->ctx.data.data != NULL) sl_free_buffer(w->ctx.alloc, w->ctx.data.data, w->ctx.data.cap);
  sl_avro_buf_release(&w->ctx.packed, w->ctx.alloc);
  if (w->schema.release != NULL) w->schema.release(&w->schema);
  sl_free(w->ctx.alloc, w, sizeof *w);
}

static int avro_open(const struct ArrowSchema* schema, struct sl_sink* sink,
                     const struct sl_write_args* args, void** state, struct sluice_error* error) {
  *state = NULL;
  struct avro_writer* w = sl_calloc(args->alloc, 1, sizeof *w);
  if (w == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory");
  w->ctx.alloc = args->alloc;
  w->ctx.sink = sink;
  w->ctx.poll_left = AW_POLL_VALUES;
  w->ctx.row = args->first_row;  // errors name rows from it
  w->sink = sink;
  int rc = parse_options(&w->ctx, args, error);
  if (rc == 0 && !w->ctx.have_sync) rc = random_sync(w->ctx.sync, error);
  if (rc == 0 && strcmp(schema->format, "+s") != 0) {
    char tn[64];
    sl_format_name(schema->format, tn, sizeof tn);
    rc = sl_error_set(error, EINVAL, "avro: stream of %s arrays, expected a struct", tn);
  }
  if (rc == 0) rc = sl_schema_copy(schema, w->ctx.alloc, &w->schema, error);
  w->ctx.ns = "";
  if (rc == 0 && (w->ctx.names = json_object()) == NULL) {
    rc = sl_error_set(error, ENOMEM, "avro: out of memory");
  }
  if (rc != 0) {
    avro_close(w);
    return rc;
  }
  *state = w;
  return 0;
}

/// The schema (from `first`'s dictionaries where it has enums; NULL = no
/// batch) and the header, once.
static int ensure_header(struct avro_writer* w, const struct ArrowArray* first,
                         struct sluice_error* error) {
  if (w->header_written) return 0;
  // The stream's Avro schema (it came from an Avro file), for its names;
  // one that does not parse gives none.
  int32_t vn;
  const char* v = sl_metadata_find(w->schema.metadata, "avro.schema", &vn);
  struct avro_schema parsed;
  struct sluice_error ignored;
  int parse_rc = v != NULL && vn > 0
                     ? sl_avro_schema_parse(v, (size_t)vn, w->ctx.alloc, &parsed, &ignored)
                     : EINVAL;
  // Out of memory is not "does not parse": the copy would lose its names.
  if (parse_rc == ENOMEM) return sl_error_set(error, ENOMEM, "avro: out of memory");
  int have = parse_rc == 0;
  const struct avro_node* src = have ? parsed.root : NULL;
  // A root that is no record (an enum, array, union...) the reader read as
  // the column "value" of a wrapper row: that column takes the root's names,
  // and alone it is written as the root again (a record of one field is
  // encoded as that field's value alone), so the copy has the source's schema.
  struct avro_node* wrapped = NULL;
  char value[] = "value";  // (the reader's name for it, avro_schema.c)
  char* value_name = value;
  struct avro_node wrapper = {.kind = AVRO_RECORD, .n = 1, .items = &wrapped, .names = &value_name};
  int unwrap = 0;
  if (src != NULL && src->kind != AVRO_RECORD) {
    wrapped = (struct avro_node*)src;
    src = &wrapper;
    unwrap = w->schema.n_children == 1 && w->schema.children[0]->name != NULL &&
             strcmp(w->schema.children[0]->name, value) == 0;
  }
  // The top-level record: the source's (with the same fields in the same
  // order), else "Root".
  const char* want = src_name(src, AVRO_RECORD, NULL);
  if (want != NULL && !same_fields(src, &w->schema)) want = NULL;
  const char* dot = want != NULL ? strrchr(want, '.') : NULL;
  char top[1024], ns[1024];
  snprintf(top, sizeof top, "%s", want == NULL ? "Root" : dot != NULL ? dot + 1 : want);
  json_t* js = NULL;
  char* text = NULL;
  int rc = build_record(&w->ctx, &w->schema, first, &w->root, top, "", 0, src, NULL, &js, error);
  if (have) sl_avro_schema_release(&parsed);
  if (rc == 0 && (!json_is_object(js) || relative_names(js, "") != 0)) {
    rc = sl_error_set(error, ENOMEM, "avro: out of memory");
  }
  if (rc == 0 && unwrap) {
    json_t* field = json_array_get(json_object_get(js, "fields"), 0);
    json_t* type = json_object_get(field, "type");
    if (type == NULL) {
      rc = sl_error_set(error, ENOMEM, "avro: out of memory");
    } else {
      json_incref(type);
      json_decref(js);
      js = type;
    }
  }
  // As Java writes it: a short name and its namespace.
  const char* full =
      rc == 0 && json_is_object(js) && is_named_kind(json_string_value(json_object_get(js, "type")))
          ? json_string_value(json_object_get(js, "name"))
          : NULL;
  if (full != NULL && (dot = strrchr(full, '.')) != NULL) {
    snprintf(top, sizeof top, "%s", dot + 1);
    namespace_of(full, ns, sizeof ns);
    if (json_object_set_new(js, "name", json_string(top)) != 0 ||
        json_object_set_new(js, "namespace", json_string(ns)) != 0) {
      rc = sl_error_set(error, ENOMEM, "avro: out of memory");
    }
  }
  if (rc == 0 &&
      (text = json_dumps(js, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY)) == NULL) {
    rc = sl_error_set(error, ENOMEM, "avro: out of memory");
  }
  if (rc == 0) rc = write_header(&w->ctx, text, &w->schema, &w->root, w->sink, error);
  if (rc == 0) w->header_written = 1;
  free(text);
  json_decref(js);
  return rc;
}

/// Encodes `batch` (taken) into blocks; with SL_PUSH_END_ROW_GROUP the last block
/// ends there and the compressing workers stop.
static int avro_push(void* state, struct ArrowArray* batch, int flags,
                     struct sluice_error* error) {
  struct avro_writer* w = state;
  struct aw_ctx* ctx = &w->ctx;
  int rc = 0;
  if (batch != NULL && batch->release != NULL) {
    if (batch->n_children != w->schema.n_children) {
      rc = sl_error_set(error, EINVAL, "avro: batch has %lld columns, schema %lld",
                        (long long)batch->n_children, (long long)w->schema.n_children);
    }
    if (rc == 0) rc = ensure_header(w, batch, error);
    if (rc == 0 && !w->pipe_on && ctx->codec != AVRO_CODEC_NULL) {
      w->pipe_on = pipe_start(&w->pipe, ctx, w->sink);
    }
    struct aw_pipe* pipe = w->pipe_on ? &w->pipe : NULL;
    ctx->gen++;
    for (int64_t r = 0; rc == 0 && r < batch->length; ++r) {
      if ((rc = aw_poll(ctx, error)) != 0) break;
      if (is_null(batch, batch->offset + r)) {
        rc = sl_error_set(error, EINVAL, "avro: row %" PRId64 " is null (a null struct row)",
                          ctx->row);
        break;
      }
      for (int64_t c = 0; rc == 0 && c < w->root.n_children; ++c) {
        ctx->column = w->schema.children[c]->name ? w->schema.children[c]->name : "";
        rc = encode(ctx, &w->root.children[c], batch->children[c], batch->offset + r, error);
      }
      ctx->row++;
      w->in_block++;
      if (rc == 0 && ctx->data.size >= ctx->block_size) {
        rc = flush_block(ctx, pipe, w->in_block, w->sink, error);
        w->in_block = 0;
      }
    }
    batch->release(batch);
  }
  int end_row_group = flags & SL_PUSH_END_ROW_GROUP;
  if (rc == 0 && end_row_group) {
    rc = flush_block(ctx, w->pipe_on ? &w->pipe : NULL, w->in_block, w->sink, error);
    w->in_block = 0;
  }
  return end_row_group || rc != 0 ? stop_pipe(w, rc, error) : 0;
}

static int avro_finish(void* state, struct sluice_error* error) {
  struct avro_writer* w = state;
  int rc = ensure_header(w, NULL, error);
  if (rc == 0) rc = flush_block(&w->ctx, w->pipe_on ? &w->pipe : NULL, w->in_block, w->sink, error);
  w->in_block = 0;
  return stop_pipe(w, rc, error);
}

static const struct sl_format_writer k_avro_writer;

static int avro_write(struct ArrowArrayStream* stream, struct sl_sink* sink,
                      const struct sl_write_args* args, struct sluice_error* error) {
  return sl_format_write_pushed(&k_avro_writer, stream, sink, args, error);
}

static const char* const k_avro_extensions[] = {".avro", NULL};
static const struct sl_format_writer k_avro_writer = {
    .name = "avro", .extensions = k_avro_extensions, .write = avro_write, .open = avro_open,
    .push = avro_push, .finish = avro_finish, .close = avro_close};

const struct sl_format_writer* sl_avro_writer(void) { return &k_avro_writer; }
