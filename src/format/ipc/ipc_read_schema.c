// Schema flatbuffer -> ArrowSchema (format strings, names, flags, metadata)
// plus the ipc_field tree the batch decoder walks.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_buffer.h"
#include "core/sl_error.h"
#include "core/sl_utf8.h"
#include "core/sl_value_text.h"
#include "ipc_fbs.h"
#include "ipc_internal.h"

struct schema_parser {
  const struct sluice_allocator* alloc;
  const struct ipc_where* where;
  struct fb_buf* fb;
  struct ipc_schema* out;
  struct sluice_error* error;
  int64_t budget;          ///< fields still allowed (shared subtables can't blow up)
  int64_t dicts_cap;
  struct sl_buffer text;   ///< scratch for NUL-terminated names / formats
  struct sl_buffer meta;   ///< scratch for encoded metadata
  int types_only;          ///< IPC_SCHEMA_TYPES_ONLY
  /// Inside a field never decoded (run-end encoded, list view) but not in a
  /// dictionary's values (which are): views there are described as views.
  int undecoded;
  char path[160];          ///< dotted path of the field being parsed
  size_t path_len;
};

int sl_ipc_fb_error(const struct fb_buf* fb, const struct ipc_where* where, const char* what,
                 struct sluice_error* error) {
  return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": malformed %s: %s at byte %zu",
                      where->name, where->offset, what, fb->why ? fb->why : "bad flatbuffer",
                      fb->at);
}

static int bad(struct schema_parser* p, const char* what) {
  return sl_ipc_fb_error(p->fb, p->where, what, p->error);
}

/// An error about field `field`; `fmt` is one of the literal formats below
/// with exactly one int64 conversion (the prototype widens every value).
static int invalid(struct schema_parser* p, int code, const char* fmt, const char* field,
                   int64_t value) {
  char reason[256];
  snprintf(reason, sizeof reason, fmt, value);
  return sl_error_set(p->error, code, "%s: offset %" PRId64 ": field '%s': %s", p->where->name,
                      p->where->offset, field, reason);
}

static void field_reset(const struct sluice_allocator* alloc, struct ipc_field* f) {
  if (f->children != NULL) {
    for (int64_t i = 0; i < f->n_children; ++i) field_reset(alloc, &f->children[i]);
    sl_free(alloc, f->children, (size_t)f->n_children * sizeof *f->children);
  }
  if (f->dict_value != NULL) {
    field_reset(alloc, f->dict_value);
    sl_free(alloc, f->dict_value, sizeof *f->dict_value);
  }
  memset(f, 0, sizeof *f);
}

void sl_ipc_schema_reset(struct ipc_schema* s) {
  if (s->schema.release != NULL) s->schema.release(&s->schema);
  field_reset(s->alloc, &s->root);
  if (s->dicts != NULL) sl_free(s->alloc, s->dicts, (size_t)s->n_dicts * sizeof *s->dicts);
  s->dicts = NULL;
  s->n_dicts = 0;
}

enum ipc_use sl_ipc_field_use(const struct sl_split_fields* fields, int64_t col,
                              const int64_t* at, int64_t depth) {
  int some = 0;
  for (int64_t k = 0; fields != NULL && k < fields->n; ++k) {
    const int64_t* p = fields->path[k];
    if (fields->column[k] != col || p == NULL) continue;
    int64_t n = p[0] < depth ? p[0] : depth, d = 1;
    while (d <= n && p[d] == at[d]) ++d;
    if (d <= n) continue;                    // another branch
    if (p[0] <= depth) return IPC_USE_ALL;  // this field or one above it is kept
    some = 1;                               // one below it is
  }
  return some ? IPC_USE_SOME : depth == 0 ? IPC_USE_ALL : IPC_USE_NONE;
}

/// What find_unsupported walks: the kept fields of a column.
struct kept_walk {
  const struct sl_split_fields* fields;
  int64_t col;
  int64_t at[IPC_MAX_DEPTH + 2];
};

/// The path (into `path`, from `len`) and type name of the first field of
/// `s` (at depth `depth` of the column, kept as `use` says) the decoder
/// cannot read; 0 if it has none.
static int find_unsupported(const struct ArrowSchema* s, struct kept_walk* w, int64_t depth,
                            enum ipc_use use, char* path, size_t cap, size_t len,
                            const char** type) {
  if (s->name != NULL && s->name[0] != '\0' && len < cap - 1) {
    int n = snprintf(path + len, cap - len, "%s%s", len > 0 ? "." : "", s->name);
    if (n > 0) len += (size_t)n;
    if (len > cap - 1) len = cap - 1;
  }
  const char* f = s->format;
  if (strcmp(f, "+r") == 0 || strcmp(f, "+vl") == 0 || strcmp(f, "+vL") == 0) {
    *type = f[1] == 'r' ? "run_end_encoded" : f[2] == 'l' ? "list_view" : "large_list_view";
    return 1;
  }
  if (s->dictionary != NULL &&
      find_unsupported(s->dictionary, w, depth, IPC_USE_ALL, path, cap, len, type))
    return 1;
  // As the decoder does: only a plain struct is kept in part.
  int part = use == IPC_USE_SOME && strcmp(f, "+s") == 0 && depth < IPC_MAX_DEPTH;
  for (int64_t i = 0; i < s->n_children; ++i) {
    enum ipc_use child = IPC_USE_ALL;
    if (part) {
      w->at[depth + 1] = i;
      child = sl_ipc_field_use(w->fields, w->col, w->at, depth + 1);
    }
    if (child != IPC_USE_NONE &&
        find_unsupported(s->children[i], w, depth + 1, child, path, cap, len, type))
      return 1;
  }
  path[len] = '\0';
  return 0;
}

int sl_ipc_unsupported_error(const struct ipc_schema* schema, int64_t col,
                             const struct sl_split_fields* fields, const char* name,
                             struct sluice_error* error) {
  const struct ArrowSchema* s = schema->schema.children[col];
  char path[160] = "";
  const char* type = "?";
  struct kept_walk w = {.fields = fields, .col = col};
  if (!find_unsupported(s, &w, 0, sl_ipc_field_use(fields, col, w.at, 0), path, sizeof path, 0,
                        &type))
    return 0;
  // The path starts with the column's name.
  return sl_error_set(error, ENOTSUP, "%s: field '%s': type %s is not supported (cast it to %s "
                      "first, or select only other columns)", name, path, type,
                      type[0] == 'r' ? "its value type" : "a list");
}

int64_t sl_ipc_schema_find_dict(const struct ipc_schema* schema, int64_t id) {
  for (int64_t i = 0; i < schema->n_dicts; ++i)
    if (schema->dicts[i].id == id) return i;
  return -1;
}

/// Copies `len` bytes of `s` to the scratch buffer, NUL-terminated.
static const char* scratch_str(struct schema_parser* p, const char* s, uint32_t len) {
  p->text.size = 0;
  if (sl_buffer_reserve(&p->text, (int64_t)len + 1) != 0) return NULL;
  if (len > 0) sl_buffer_append_unsafe(&p->text, s, len);
  p->text.data[p->text.size] = 0;
  return (const char*)p->text.data;
}

/// Sets the [KeyValue] vector at `slot` of `t` as the metadata of `s`. An
/// absent or empty vector leaves metadata NULL.
static int set_metadata(struct schema_parser* p, const struct fb_table* t, int slot,
                        struct ArrowSchema* s) {
  int rc = sl_ipc_read_kv_metadata(t, slot, &p->meta);
  if (rc < 0) return bad(p, "custom_metadata");
  if (rc == ENOMEM)
    return sl_error_set(p->error, ENOMEM, "%s: out of memory reading schema metadata",
                        p->where->name);
  if (p->meta.size == 0) return 0;
  return sl_schema_set_metadata(s, (const char*)p->meta.data, p->error);
}

static const char* const k_time_unit_chars = "smun";

/// What the Type union of a field says: its format string (into `fmt`) and
/// layout. `n_children` is the number of child fields present.
static int describe_type(struct schema_parser* p, const char* fname, uint8_t type_type,
                         const struct fb_table* tt, int64_t n_children, struct ipc_field* f,
                         int64_t* flags, char* fmt, size_t fmt_cap) {
  int32_t i32a, i32b, i32c;
  int16_t i16;
  int b;
  int64_t want_children = 0;  // -1 = any
  f->kind = IPC_KIND_FIXED;
  switch (type_type) {
    case IPC_TYPE_NULL:
      f->kind = IPC_KIND_NULL;
      snprintf(fmt, fmt_cap, "n");
      break;
    case IPC_TYPE_BOOL:
      f->bit_width = 1;
      snprintf(fmt, fmt_cap, "b");
      break;
    case IPC_TYPE_INT: {
      if (sl_fb_read_i32(tt, IPC_INT_BIT_WIDTH, 0, &i32a) || sl_fb_read_bool(tt, IPC_INT_IS_SIGNED, 0, &b))
        return bad(p, "Int type");
      const char* codes = b ? "csil" : "CSIL";
      int k = i32a == 8 ? 0 : i32a == 16 ? 1 : i32a == 32 ? 2 : i32a == 64 ? 3 : -1;
      if (k < 0) return invalid(p, EILSEQ, "integer bit width %" PRId64 " is not 8/16/32/64", fname, i32a);
      f->bit_width = i32a;
      snprintf(fmt, fmt_cap, "%c", codes[k]);
      break;
    }
    case IPC_TYPE_FLOATING_POINT:
      if (sl_fb_read_i16(tt, IPC_FLOATING_POINT_PRECISION, 0, &i16)) return bad(p, "FloatingPoint type");
      if (i16 < 0 || i16 > 2) return invalid(p, EILSEQ, "unknown float precision %" PRId64, fname, i16);
      f->bit_width = 16 << i16;
      snprintf(fmt, fmt_cap, "%c", "efg"[i16]);
      break;
    case IPC_TYPE_BINARY:
    case IPC_TYPE_UTF8:
    case IPC_TYPE_LARGE_BINARY:
    case IPC_TYPE_LARGE_UTF8:
      f->kind = IPC_KIND_VARBIN;
      f->offset_width = (type_type == IPC_TYPE_LARGE_BINARY || type_type == IPC_TYPE_LARGE_UTF8) ? 8 : 4;
      snprintf(fmt, fmt_cap, "%s",
               type_type == IPC_TYPE_BINARY ? "z" : type_type == IPC_TYPE_UTF8 ? "u"
               : type_type == IPC_TYPE_LARGE_BINARY ? "Z" : "U");
      break;
    case IPC_TYPE_FIXED_SIZE_BINARY:
      if (sl_fb_read_i32(tt, IPC_FIXED_SIZE_BINARY_BYTE_WIDTH, 0, &i32a)) return bad(p, "FixedSizeBinary type");
      if (i32a < 0 || i32a > (INT32_MAX >> 3))
        return invalid(p, EILSEQ, "fixed_size_binary width %" PRId64 " out of range", fname, i32a);
      f->bit_width = i32a * 8;
      snprintf(fmt, fmt_cap, "w:%d", (int)i32a);
      break;
    case IPC_TYPE_DECIMAL:
      if (sl_fb_read_i32(tt, IPC_DECIMAL_PRECISION, 0, &i32a) || sl_fb_read_i32(tt, IPC_DECIMAL_SCALE, 0, &i32b) ||
          sl_fb_read_i32(tt, IPC_DECIMAL_BIT_WIDTH, 128, &i32c))
        return bad(p, "Decimal type");
      if (i32c != 32 && i32c != 64 && i32c != 128 && i32c != 256)
        return invalid(p, ENOTSUP, "decimal bit width %" PRId64 " is not supported", fname, i32c);
      {
        // As Arrow (and pyarrow) bounds it: the digits the width holds.
        int32_t most = i32c == 32 ? 9 : i32c == 64 ? 18 : i32c == 128 ? 38 : 76;
        if (i32a < 1 || i32a > most)
          return sl_error_set(p->error, EILSEQ, "%s: offset %" PRId64 ": field '%s': decimal%d "
                              "precision %d out of range [1, %d]", p->where->name,
                              p->where->offset, fname, (int)i32c, (int)i32a, (int)most);
      }
      f->bit_width = i32c;
      if (i32c < 128 && !p->types_only) {
        // decimal32 / decimal64 are read as decimal128 (see widen_decimals).
        f->stored_width = i32c;
        f->bit_width = 128;
      }
      if (f->bit_width == 128) snprintf(fmt, fmt_cap, "d:%d,%d", (int)i32a, (int)i32b);
      else snprintf(fmt, fmt_cap, "d:%d,%d,%d", (int)i32a, (int)i32b, (int)i32c);
      break;
    case IPC_TYPE_DATE:
      if (sl_fb_read_i16(tt, IPC_DATE_UNIT, IPC_DATE_MILLISECOND, &i16)) return bad(p, "Date type");
      if (i16 != IPC_DATE_DAY && i16 != IPC_DATE_MILLISECOND)
        return invalid(p, EILSEQ, "unknown date unit %" PRId64, fname, i16);
      f->bit_width = i16 == IPC_DATE_DAY ? 32 : 64;
      snprintf(fmt, fmt_cap, "%s", i16 == IPC_DATE_DAY ? "tdD" : "tdm");
      break;
    case IPC_TYPE_TIME:
      if (sl_fb_read_i16(tt, IPC_TIME_UNIT, IPC_TIME_MILLISECOND, &i16) ||
          sl_fb_read_i32(tt, IPC_TIME_BIT_WIDTH, 32, &i32a))
        return bad(p, "Time type");
      if (i16 < 0 || i16 > 3) return invalid(p, EILSEQ, "unknown time unit %" PRId64, fname, i16);
      if (i32a != (i16 <= IPC_TIME_MILLISECOND ? 32 : 64))
        return invalid(p, EILSEQ, "time bit width %" PRId64 " does not match its unit", fname, i32a);
      f->bit_width = i32a;
      snprintf(fmt, fmt_cap, "tt%c", k_time_unit_chars[i16]);
      break;
    case IPC_TYPE_TIMESTAMP: {
      const char* tz;
      uint32_t tzlen;
      if (sl_fb_read_i16(tt, IPC_TIMESTAMP_UNIT, 0, &i16) ||
          sl_fb_read_string(tt, IPC_TIMESTAMP_TIMEZONE, &tz, &tzlen) < 0)
        return bad(p, "Timestamp type");
      if (i16 < 0 || i16 > 3) return invalid(p, EILSEQ, "unknown time unit %" PRId64, fname, i16);
      if (tzlen > fmt_cap - 8 || (tz != NULL && memchr(tz, 0, tzlen) != NULL))
        return invalid(p, EILSEQ, "timezone string too long or not text (%" PRId64 " bytes)", fname, tzlen);
      f->bit_width = 64;
      snprintf(fmt, fmt_cap, "ts%c:%.*s", k_time_unit_chars[i16], (int)tzlen, tz ? tz : "");
      break;
    }
    case IPC_TYPE_DURATION:
      if (sl_fb_read_i16(tt, IPC_DURATION_UNIT, IPC_TIME_MILLISECOND, &i16)) return bad(p, "Duration type");
      if (i16 < 0 || i16 > 3) return invalid(p, EILSEQ, "unknown time unit %" PRId64, fname, i16);
      f->bit_width = 64;
      snprintf(fmt, fmt_cap, "tD%c", k_time_unit_chars[i16]);
      break;
    case IPC_TYPE_INTERVAL:
      if (sl_fb_read_i16(tt, IPC_INTERVAL_UNIT, 0, &i16)) return bad(p, "Interval type");
      if (i16 < 0 || i16 > 2) return invalid(p, EILSEQ, "unknown interval unit %" PRId64, fname, i16);
      f->bit_width = i16 == IPC_INTERVAL_YEAR_MONTH ? 32 : i16 == IPC_INTERVAL_DAY_TIME ? 64 : 128;
      snprintf(fmt, fmt_cap, "ti%c", "MDn"[i16]);
      break;
    case IPC_TYPE_LIST:
    case IPC_TYPE_LARGE_LIST:
      f->kind = IPC_KIND_LIST;
      f->offset_width = type_type == IPC_TYPE_LIST ? 4 : 8;
      want_children = 1;
      snprintf(fmt, fmt_cap, "%s", type_type == IPC_TYPE_LIST ? "+l" : "+L");
      break;
    case IPC_TYPE_MAP:
      if (sl_fb_read_bool(tt, IPC_MAP_KEYS_SORTED, 0, &b)) return bad(p, "Map type");
      if (b) *flags |= ARROW_FLAG_MAP_KEYS_SORTED;
      f->kind = IPC_KIND_LIST;
      f->offset_width = 4;
      want_children = 1;
      snprintf(fmt, fmt_cap, "+m");
      break;
    case IPC_TYPE_FIXED_SIZE_LIST:
      if (sl_fb_read_i32(tt, IPC_FIXED_SIZE_LIST_LIST_SIZE, 0, &i32a)) return bad(p, "FixedSizeList type");
      if (i32a < 0) return invalid(p, EILSEQ, "negative fixed_size_list size %" PRId64, fname, i32a);
      f->kind = IPC_KIND_FIXED_LIST;
      f->bit_width = i32a;  // the list size, for the decoder
      want_children = 1;
      snprintf(fmt, fmt_cap, "+w:%d", (int)i32a);
      break;
    case IPC_TYPE_STRUCT:
      f->kind = IPC_KIND_STRUCT;
      want_children = -1;
      snprintf(fmt, fmt_cap, "+s");
      break;
    case IPC_TYPE_UNION: {
      struct fb_vec ids;
      if (sl_fb_read_i16(tt, IPC_UNION_MODE, 0, &i16) || sl_fb_read_vec(tt, IPC_UNION_TYPE_IDS, 4, &ids) < 0)
        return bad(p, "Union type");
      if (i16 != IPC_UNION_SPARSE && i16 != IPC_UNION_DENSE)
        return invalid(p, EILSEQ, "unknown union mode %" PRId64, fname, i16);
      if (n_children > 127) return invalid(p, EILSEQ, "union with %" PRId64 " children (max 127)", fname, n_children);
      if (ids.count != 0 && ids.count != (uint32_t)n_children)
        return invalid(p, EILSEQ, "union has %" PRId64 " type ids for its children", fname, ids.count);
      f->kind = i16 == IPC_UNION_DENSE ? IPC_KIND_DENSE_UNION : IPC_KIND_SPARSE_UNION;
      want_children = -1;
      size_t len = (size_t)snprintf(fmt, fmt_cap, "+u%c:", i16 == IPC_UNION_DENSE ? 'd' : 's');
      uint8_t seen[128] = {0};
      for (int64_t i = 0; i < n_children; ++i) {
        int32_t id = (int32_t)i;
        if (ids.count != 0) id = fb_load_i32(sl_fb_vec_elem(&ids, (uint32_t)i));
        if (id < 0 || id > 127) return invalid(p, EILSEQ, "union type id %" PRId64 " out of range", fname, id);
        // A repeated code would make two children claim the same slots.
        if (seen[id]++) return invalid(p, EILSEQ, "union type id %" PRId64 " is repeated", fname, id);
        len += (size_t)snprintf(fmt + len, fmt_cap - len, i ? ",%d" : "%d", (int)id);
      }
      break;
    }
    case IPC_TYPE_NONE:
      return invalid(p, EILSEQ, "missing type (Type union tag %" PRId64 ")", fname, type_type);
    case IPC_TYPE_BINARY_VIEW:
    case IPC_TYPE_UTF8_VIEW:
      f->kind = IPC_KIND_VARBIN;
      f->offset_width = 8;
      f->is_view = !p->types_only;  // laid out so in a body (see decode_views)
      if (p->types_only || p->undecoded) {  // never decoded: named as pyarrow names it
        snprintf(fmt, fmt_cap, "%s", type_type == IPC_TYPE_BINARY_VIEW ? "vz" : "vu");
        break;
      }
      // Read as large_binary / large_utf8 (see decode_views).
      snprintf(fmt, fmt_cap, "%s", type_type == IPC_TYPE_BINARY_VIEW ? "Z" : "U");
      break;
    case IPC_TYPE_RUN_END_ENCODED:
      // Not decoded, but described and laid out so that a projection can
      // leave the column out (pyarrow and polars read the other columns);
      // reading it is refused by sl_ipc_unsupported_error. A Parquet
      // file's stored Arrow schema (types_only) reads it as its value type.
      f->kind = IPC_KIND_RUN_END;
      f->unsupported = 1;
      want_children = 2;
      snprintf(fmt, fmt_cap, "+r");
      break;
    case IPC_TYPE_LIST_VIEW:
    case IPC_TYPE_LARGE_LIST_VIEW:
      f->kind = IPC_KIND_LIST_VIEW;
      f->unsupported = 1;
      f->offset_width = type_type == IPC_TYPE_LIST_VIEW ? 4 : 8;
      want_children = 1;
      snprintf(fmt, fmt_cap, "%s", type_type == IPC_TYPE_LIST_VIEW ? "+vl" : "+vL");
      break;
    default:
      return invalid(p, ENOTSUP, "unknown type tag %" PRId64, fname, type_type);
  }
  if (want_children >= 0 && n_children != want_children)
    return invalid(p, EILSEQ, "type expects %" PRId64 " children", fname, want_children);
  return 0;
}

/// Subtree sizes of f (children already counted), as a record batch sees it.
static void count_subtree(struct ipc_field* f) {
  static const int8_t k_buffers[] = {
    [IPC_KIND_NULL] = 0, [IPC_KIND_FIXED] = 2, [IPC_KIND_VARBIN] = 3, [IPC_KIND_LIST] = 2,
    [IPC_KIND_FIXED_LIST] = 1, [IPC_KIND_STRUCT] = 1, [IPC_KIND_SPARSE_UNION] = 1,
    [IPC_KIND_DENSE_UNION] = 2, [IPC_KIND_RUN_END] = 0, [IPC_KIND_LIST_VIEW] = 3,
  };
  // A view field has validity and views, then a per-batch number of data
  // buffers (the batch's variadicBufferCounts), counted when decoding.
  int own_buffers = f->is_view ? 2 : k_buffers[f->kind];
  f->n_nodes = 1;
  f->n_buffers = own_buffers;
  f->n_unions = (f->kind == IPC_KIND_SPARSE_UNION || f->kind == IPC_KIND_DENSE_UNION) ? 1 : 0;
  f->n_views = f->is_view;
  for (int64_t i = 0; i < f->n_children; ++i) {
    struct ipc_field* c = &f->children[i];
    c->node_start = f->n_nodes - 1;
    c->buffer_start = f->n_buffers - own_buffers;
    c->union_start = f->n_unions - (f->kind >= IPC_KIND_SPARSE_UNION ? 1 : 0);
    c->view_start = f->n_views;  // a view field has no children
    f->n_nodes += c->n_nodes;
    f->n_buffers += c->n_buffers;
    f->n_unions += c->n_unions;
    f->n_views += c->n_views;
    f->unsupported |= c->unsupported;
  }
}

/// 1 if two value schemas describe the same type (formats, recursively).
static int same_type(const struct ArrowSchema* a, const struct ArrowSchema* b) {
  if (strcmp(a->format, b->format) != 0 || a->n_children != b->n_children) return 0;
  if ((a->dictionary == NULL) != (b->dictionary == NULL)) return 0;
  if (a->dictionary != NULL && !same_type(a->dictionary, b->dictionary)) return 0;
  for (int64_t i = 0; i < a->n_children; ++i)
    if (!same_type(a->children[i], b->children[i])) return 0;
  return 1;
}

static int add_dict(struct schema_parser* p, int64_t id, const struct ipc_field* value,
                    const struct ArrowSchema* value_schema) {
  struct ipc_schema* s = p->out;
  int64_t at = sl_ipc_schema_find_dict(s, id);
  if (at >= 0) {
    if (!same_type(s->dicts[at].value_schema, value_schema))
      return sl_error_set(p->error, EILSEQ,
                          "%s: offset %" PRId64 ": dictionary id %" PRId64
                          " is used by fields of different types",
                          p->where->name, p->where->offset, id);
    return 0;
  }
  if (s->n_dicts == p->dicts_cap) {
    int64_t cap = p->dicts_cap ? p->dicts_cap * 2 : 4;
    struct ipc_dict_decl* d = sl_alloc(p->alloc, (size_t)cap * sizeof *d);
    if (d == NULL) return sl_error_set(p->error, ENOMEM, "%s: out of memory", p->where->name);
    if (s->n_dicts) memcpy(d, s->dicts, (size_t)s->n_dicts * sizeof *d);
    if (s->dicts) sl_free(p->alloc, s->dicts, (size_t)p->dicts_cap * sizeof *d);
    s->dicts = d;
    p->dicts_cap = cap;
  }
  s->dicts[s->n_dicts].id = id;
  snprintf(s->dicts[s->n_dicts].column, sizeof s->dicts[s->n_dicts].column, "%s", p->path);
  s->dicts[s->n_dicts].value = value;
  s->dicts[s->n_dicts].value_schema = value_schema;
  s->n_dicts++;
  return 0;
}

static int parse_children(struct schema_parser* p, const struct fb_vec* kids, int depth,
                          struct ArrowSchema* s, struct ipc_field* f);

static int parse_field_as(struct schema_parser* p, const struct fb_table* ft, int depth,
                          struct ArrowSchema* s, struct ipc_field* f);

/// One Field table into schema node `s` (allocated empty) and layout `f`.
static int parse_field(struct schema_parser* p, const struct fb_table* ft, int depth,
                       struct ArrowSchema* s, struct ipc_field* f) {
  struct fb_table dict;
  int undecoded = p->undecoded;
  if (sl_fb_read_table(ft, IPC_FIELD_DICTIONARY, &dict) == 1) p->undecoded = 0;
  int rc = parse_field_as(p, ft, depth, s, f);
  p->undecoded = undecoded;
  return rc;
}

/// parse_field, p->undecoded set for the field.
static int parse_field_as(struct schema_parser* p, const struct fb_table* ft, int depth,
                          struct ArrowSchema* s, struct ipc_field* f) {
  const char* name;
  uint32_t name_len;
  int nullable;
  uint8_t type_type;
  struct fb_table tt, dict;
  struct fb_vec kids;
  char fmt[1024];
  int64_t flags = 0;
  f->dict_id = -1;
  if (--p->budget < 0 || depth > IPC_MAX_DEPTH)
    return sl_error_set(p->error, EILSEQ, "%s: offset %" PRId64 ": schema nests deeper than %d levels or has too many fields",
                        p->where->name, p->where->offset, IPC_MAX_DEPTH);
  if (sl_fb_read_string(ft, IPC_FIELD_NAME, &name, &name_len) < 0 ||
      sl_fb_read_bool(ft, IPC_FIELD_NULLABLE, 0, &nullable) < 0 ||
      sl_fb_read_u8(ft, IPC_FIELD_TYPE_TYPE, 0, &type_type) < 0)
    return bad(p, "Field");
  if (name != NULL && memchr(name, '\0', name_len) != NULL) {
    // Arrow's C interface ends a name at its first NUL: 'a\0b' and 'a\0c'
    // were both read (and written on) as 'a'.
    char shown[160];
    return sl_error_set(p->error, EILSEQ, "%s: offset %" PRId64 ": field name '%s' holds a NUL "
                        "byte, which a column name cannot hold (Arrow's C interface ends a name "
                        "there)", p->where->name, p->where->offset,
                        sl_escaped(name, name_len, '\'', shown, sizeof shown));
  }
  int64_t bad_at = name != NULL ? sl_utf8_invalid_at((const uint8_t*)name, name_len) : -1;
  if (bad_at >= 0) {
    // Names are UTF-8 in Arrow: pyarrow's Python side cannot even open a
    // file that names a column otherwise, and it would pass through to
    // every file written from this one.
    char shown[160];
    return sl_error_set(p->error, EILSEQ, "%s: offset %" PRId64 ": field name '%s' is not "
                        "valid UTF-8 (at byte %" PRId64 ")", p->where->name, p->where->offset,
                        sl_escaped(name, name_len, '\'', shown, sizeof shown), bad_at);
  }
  int has_type = sl_fb_read_table(ft, IPC_FIELD_TYPE, &tt);
  int has_dict = sl_fb_read_table(ft, IPC_FIELD_DICTIONARY, &dict);
  if (has_type < 0 || has_dict < 0 || sl_fb_read_vec(ft, IPC_FIELD_CHILDREN, 4, &kids) < 0)
    return bad(p, "Field");
  if (has_type == 0) {  // parameterless types may omit the (empty) table
    memset(&tt, 0, sizeof tt);
    tt.buf = p->fb;
  }
  // Messages name the field by its path from the column, not only its own
  // name ('item' of which list?); parse_children restores the parent's.
  if (p->path_len < sizeof p->path - 1) {
    int n = snprintf(p->path + p->path_len, sizeof p->path - p->path_len, "%s%.*s",
                     depth > 1 ? "." : "", (int)(name_len < 120 ? name_len : 120),
                     name ? name : "");
    if (n > 0) p->path_len += (size_t)n;
    if (p->path_len > sizeof p->path - 1) p->path_len = sizeof p->path - 1;
  }
  if (nullable) flags |= ARROW_FLAG_NULLABLE;
  int rc = describe_type(p, p->path, type_type, &tt, kids.count, f, &flags, fmt, sizeof fmt);
  if (rc != 0) return rc;
  const char* cname = scratch_str(p, name, name_len);
  if (cname == NULL) return sl_error_set(p->error, ENOMEM, "%s: out of memory", p->where->name);

  if (has_dict == 0) {
    SL_RETURN_NOT_OK(sl_schema_init(s, p->alloc, fmt, cname, flags, kids.count, p->error));
    SL_RETURN_NOT_OK(set_metadata(p, ft, IPC_FIELD_CUSTOM_METADATA, s));
    p->undecoded += f->kind == IPC_KIND_RUN_END || f->kind == IPC_KIND_LIST_VIEW;
    SL_RETURN_NOT_OK(parse_children(p, &kids, depth, s, f));
    if (fmt[0] == '+' && fmt[1] == 'm') {
      const struct ipc_field* e = &f->children[0];
      if (e->kind != IPC_KIND_STRUCT || e->n_children != 2 || e->dict_id >= 0)
        return sl_error_set(p->error, EILSEQ, "%s: offset %" PRId64 ": field '%s': map entries must "
                            "be a struct of 2 fields", p->where->name, p->where->offset, p->path);
    }
    count_subtree(f);
    return 0;
  }

  // Dictionary-encoded: the node is the indexes, its dictionary the values.
  int64_t id;
  int ordered;
  int32_t iw = 32;
  int is_signed = 1;
  struct fb_table it;
  int has_it = sl_fb_read_table(&dict, IPC_DICTIONARY_ENCODING_INDEX_TYPE, &it);
  if (sl_fb_read_i64(&dict, IPC_DICTIONARY_ENCODING_ID, 0, &id) < 0 ||
      sl_fb_read_bool(&dict, IPC_DICTIONARY_ENCODING_IS_ORDERED, 0, &ordered) < 0 || has_it < 0)
    return bad(p, "DictionaryEncoding");
  if (has_it && (sl_fb_read_i32(&it, IPC_INT_BIT_WIDTH, 0, &iw) < 0 ||
                 sl_fb_read_bool(&it, IPC_INT_IS_SIGNED, 0, &is_signed) < 0))
    return bad(p, "DictionaryEncoding");
  int k = iw == 8 ? 0 : iw == 16 ? 1 : iw == 32 ? 2 : iw == 64 ? 3 : -1;
  if (k < 0) return invalid(p, EILSEQ, "dictionary index bit width %" PRId64 " is not 8/16/32/64", p->path, iw);
  if (ordered) flags |= ARROW_FLAG_DICTIONARY_ORDERED;
  char ifmt[2] = {(is_signed ? "csil" : "CSIL")[k], 0};
  struct ipc_field* value = sl_calloc(p->alloc, 1, sizeof *value);
  if (value == NULL) return sl_error_set(p->error, ENOMEM, "%s: out of memory", p->where->name);
  *value = *f;
  value->dict_id = -1;
  memset(f, 0, sizeof *f);
  f->kind = IPC_KIND_FIXED;
  f->bit_width = iw;
  f->dict_id = id;
  f->dict_value = value;
  SL_RETURN_NOT_OK(sl_schema_init(s, p->alloc, ifmt, cname,
                                  flags & ~(int64_t)ARROW_FLAG_MAP_KEYS_SORTED, 0, p->error));
  SL_RETURN_NOT_OK(set_metadata(p, ft, IPC_FIELD_CUSTOM_METADATA, s));
  SL_RETURN_NOT_OK(sl_schema_alloc_dictionary(s, p->error));
  SL_RETURN_NOT_OK(sl_schema_init(s->dictionary, p->alloc, fmt, NULL,
                                  flags & ~(int64_t)ARROW_FLAG_DICTIONARY_ORDERED,
                                  kids.count, p->error));
  SL_RETURN_NOT_OK(parse_children(p, &kids, depth, s->dictionary, value));
  count_subtree(value);
  count_subtree(f);
  f->unsupported = value->unsupported;
  return add_dict(p, id, value, s->dictionary);
}

static int parse_children(struct schema_parser* p, const struct fb_vec* kids, int depth,
                          struct ArrowSchema* s, struct ipc_field* f) {
  if (kids->count == 0) return 0;
  f->children = sl_calloc(p->alloc, kids->count, sizeof *f->children);
  if (f->children == NULL) return sl_error_set(p->error, ENOMEM, "%s: out of memory", p->where->name);
  f->n_children = kids->count;
  for (uint32_t i = 0; i < kids->count; ++i) {
    struct fb_table ct;
    f->children[i].dict_id = -1;
    if (sl_fb_vec_table(kids, i, &ct) != 0) return bad(p, "Field children");
    size_t len = p->path_len;
    SL_RETURN_NOT_OK(parse_field(p, &ct, depth + 1, s->children[i], &f->children[i]));
    p->path_len = len;
    p->path[len] = '\0';
  }
  return 0;
}

int sl_ipc_schema_parse(const struct fb_table* st, int16_t version, unsigned flags,
                     const struct sluice_allocator* alloc, const struct ipc_where* where,
                     struct ipc_schema* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  out->alloc = alloc;
  out->version = version;
  out->root.dict_id = -1;
  struct schema_parser p = {.alloc = alloc, .where = where, .fb = st->buf, .out = out,
                            .error = error, .types_only = (flags & IPC_SCHEMA_TYPES_ONLY) != 0};
  // Every Field needs at least a 4-byte offset in its parent's vector and a
  // 4-byte soffset of its own, so this bounds work by the input size even
  // when hostile offsets make subtrees share (or loop through) tables.
  p.budget = (int64_t)(st->buf->size / 8) + 1;
  sl_buffer_init(&p.text, alloc);
  sl_buffer_init(&p.meta, alloc);
  int16_t endianness;
  struct fb_vec fields;
  int rc;
  if (version < IPC_METADATA_V4) {
    rc = sl_error_set(error, ENOTSUP,
                      "%s: offset %" PRId64 ": IPC metadata version V%d predates Arrow 0.8 and "
                      "is not supported", where->name, where->offset, version + 1);
    goto done;
  }
  if (sl_fb_read_i16(st, IPC_SCHEMA_ENDIANNESS, IPC_ENDIAN_LITTLE, &endianness) < 0 ||
      sl_fb_read_vec(st, IPC_SCHEMA_FIELDS, 4, &fields) < 0) {
    rc = bad(&p, "Schema");
    goto done;
  }
  if (endianness != IPC_ENDIAN_LITTLE) {
    rc = sl_error_set(error, ENOTSUP,
                      "%s: offset %" PRId64 ": big-endian Arrow IPC data is not supported",
                      where->name, where->offset);
    goto done;
  }
  rc = sl_schema_init(&out->schema, alloc, "+s", "", 0, fields.count, error);
  if (rc == 0) rc = set_metadata(&p, st, IPC_SCHEMA_CUSTOM_METADATA, &out->schema);
  out->root.kind = IPC_KIND_STRUCT;
  if (rc == 0) rc = parse_children(&p, &fields, 0, &out->schema, &out->root);
  if (rc == 0) count_subtree(&out->root);
done:
  sl_buffer_reset(&p.text);
  sl_buffer_reset(&p.meta);
  if (rc != 0) {
    if (out->dicts != NULL) {
      sl_free(alloc, out->dicts, (size_t)p.dicts_cap * sizeof *out->dicts);
      out->dicts = NULL;
    }
    sl_ipc_schema_reset(out);
  } else if (out->dicts != NULL && p.dicts_cap != out->n_dicts) {
    // sl_ipc_schema_reset frees with the exact size: shrink to fit.
    struct ipc_dict_decl* d = sl_alloc(alloc, (size_t)out->n_dicts * sizeof *d);
    if (d == NULL) {
      sl_free(alloc, out->dicts, (size_t)p.dicts_cap * sizeof *out->dicts);
      out->dicts = NULL;
      sl_ipc_schema_reset(out);
      return sl_error_set(error, ENOMEM, "%s: out of memory", where->name);
    }
    memcpy(d, out->dicts, (size_t)out->n_dicts * sizeof *d);
    sl_free(alloc, out->dicts, (size_t)p.dicts_cap * sizeof *d);
    out->dicts = d;
  }
  return rc;
}
