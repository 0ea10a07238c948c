// Reader schema resolution (Avro spec, "Schema Resolution"): the program
// still walks the writer's encoding, but fills builders shaped by the
// reader's schema. Writer fields the reader lacks are skipped; reader fields
// the writer lacks get their default, encoded once into the program's pool
// and decoded like data for every row; numeric promotions and string/bytes
// swaps become conversion ops; enum symbols are remapped by a table.
//
// Unions resolve branch by branch (the first reader branch that matches
// exactly, else by promotion); a writer branch with no match is an error only
// if the data uses it. A writer enum symbol the reader lacks maps to the
// reader enum's "default" symbol; without one it is an error when met.
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "avro_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_decimal.h"
#include "core/sl_error.h"
#include "core/sl_name_set.h"

struct rctx {
  struct avro_program* p;
  struct sluice_error* error;
  char field[512];  ///< the path of the field being resolved ("s.x"; "": the root), for messages
};

/// The field being resolved, for messages.
static const char* here(const struct rctx* c) { return c->field[0] != '\0' ? c->field : "(root)"; }

/// The path of field `name` of the record at path length `outer`.
static void enter_field(struct rctx* c, size_t outer, const char* name) {
  if (outer + 1 < sizeof c->field)
    snprintf(c->field + outer, sizeof c->field - outer, "%s%s", outer > 0 ? "." : "", name);
}

static const char* kind_name(const struct avro_node* n) { return sl_avro_kind_name(n->kind); }

static int cannot(struct rctx* c, const struct avro_node* w, const struct avro_node* r,
                  const char* why) {
  return sl_error_set(c->error, EILSEQ, "reader schema: field '%s': cannot read the writer's %s "
                      "as %s%s%s", here(c), kind_name(w), kind_name(r), why ? ": " : "",
                      why ? why : "");
}

/* ---- defaults: JSON → Avro binary -------------------------------------------- */

static int put(struct avro_buf* b, const void* data, size_t n, const struct sluice_allocator* a,
               struct sluice_error* error) {
  SL_RETURN_NOT_OK(sl_avro_buf_reserve(b, b->size + n + 1, a, error));
  if (n > 0) memcpy(b->data + b->size, data, n);
  b->size += n;
  return 0;
}

static int put_long(struct avro_buf* b, int64_t v, const struct sluice_allocator* a,
                    struct sluice_error* error) {
  uint8_t tmp[10];
  size_t n = 0;
  uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  while (z >= 0x80) {
    tmp[n++] = (uint8_t)(z | 0x80);
    z >>= 7;
  }
  tmp[n++] = (uint8_t)z;
  return put(b, tmp, n, a, error);
}

/// bytes/fixed defaults are JSON strings whose code points 0-255 are the bytes.
static int latin1(struct rctx* c, json_t* j, struct avro_buf* tmp, const struct sluice_allocator* a) {
  const uint8_t* s = (const uint8_t*)json_string_value(j);
  size_t n = json_string_length(j);
  tmp->size = 0;
  for (size_t i = 0; i < n; ++i) {
    uint8_t byte = s[i];
    if (s[i] >= 0x80) {
      if ((s[i] & 0xE0) != 0xC0 || i + 1 >= n || s[i] > 0xC3)
        return sl_error_set(c->error, EINVAL, "reader schema: field '%s': bytes default has a "
                            "character above U+00FF", here(c));
      byte = (uint8_t)(((s[i] & 0x03) << 6) | (s[i + 1] & 0x3F));
      ++i;
    }
    SL_RETURN_NOT_OK(put(tmp, &byte, 1, a, c->error));
  }
  return 0;
}

static int encode_default(struct rctx* c, const struct avro_node* n, json_t* j, struct avro_buf* b);

/// An invalid default is the reader schema's fault whatever the data holds:
/// EINVAL, which a union branch never defers (its EILSEQ mismatches fail
/// only when a value takes the branch).
static int bad_default(struct rctx* c, const struct avro_node* n) {
  return sl_error_set(c->error, EINVAL, "reader schema: field '%s': default is not a valid %s",
                      here(c), kind_name(n));
}

/// A float or double default: a JSON number, or the strings "NaN",
/// "Infinity" and "-Infinity", which JSON lacks and Java Avro writes (and
/// reads) in their place.
static int json_number_or_special(json_t* j, double* out) {
  if (json_is_number(j)) {
    *out = json_number_value(j);
    return 1;
  }
  const char* s = json_string_value(j);
  if (s == NULL) return 0;
  if (strcmp(s, "NaN") == 0) *out = (double)NAN;
  else if (strcmp(s, "Infinity") == 0) *out = (double)INFINITY;
  else if (strcmp(s, "-Infinity") == 0) *out = -(double)INFINITY;
  else return 0;
  return 1;
}

static int encode_default(struct rctx* c, const struct avro_node* n, json_t* j, struct avro_buf* b) {
  const struct sluice_allocator* a = c->p->alloc;
  struct sluice_error* e = c->error;
  switch (n->kind) {
    case AVRO_NULL: return json_is_null(j) ? 0 : bad_default(c, n);
    case AVRO_BOOLEAN: {
      if (!json_is_boolean(j)) return bad_default(c, n);
      uint8_t v = json_is_true(j);
      return put(b, &v, 1, a, e);
    }
    case AVRO_INT: case AVRO_LONG: {
      if (!json_is_integer(j)) return bad_default(c, n);
      int64_t v = (int64_t)json_integer_value(j);
      if (n->kind == AVRO_INT && (v < INT32_MIN || v > INT32_MAX)) return bad_default(c, n);
      // As the data's values are checked (a time of day, Arrow's time32/64):
      // here, so that the reader schema is named, not the file's first block.
      int64_t day = n->logical == AVRO_LOGICAL_TIME_MS   ? INT64_C(86400000)
                    : n->logical == AVRO_LOGICAL_TIME_US ? INT64_C(86400000000)
                                                         : 0;
      if (day > 0 && (v < 0 || v >= day)) {
        return sl_error_set(e, EINVAL, "reader schema: field '%s': default %" PRId64 " is not a "
                            "time of day (%s: 0 to %" PRId64 ")", here(c), v,
                            day == INT64_C(86400000) ? "time-millis" : "time-micros", day - 1);
      }
      return put_long(b, v, a, e);
    }
    case AVRO_FLOAT: case AVRO_DOUBLE: {
      double v = 0;
      if (!json_number_or_special(j, &v)) return bad_default(c, n);
      if (n->kind == AVRO_DOUBLE) return put(b, &v, 8, a, e);
      float f = (float)v;
      return put(b, &f, 4, a, e);
    }
    case AVRO_STRING:
      if (!json_is_string(j)) return bad_default(c, n);
      SL_RETURN_NOT_OK(put_long(b, (int64_t)json_string_length(j), a, e));
      return put(b, json_string_value(j), json_string_length(j), a, e);
    case AVRO_BYTES: case AVRO_FIXED: {
      if (!json_is_string(j)) return bad_default(c, n);
      struct avro_buf tmp = {0};
      int rc = latin1(c, j, &tmp, a);
      if (rc == 0 && n->kind == AVRO_FIXED && (int64_t)tmp.size != n->size) rc = bad_default(c, n);
      // A duration's months and days (little-endian uint32s) must fit
      // Arrow's int32s, as the data's are checked.
      if (rc == 0 && n->logical == AVRO_LOGICAL_DURATION && tmp.size == 12 &&
          ((tmp.data[3] | tmp.data[7]) & 0x80) != 0) {
        rc = sl_error_set(e, EINVAL, "reader schema: field '%s': default duration has more "
                          "than %" PRId32 " months or days, which Arrow's month_day_nano "
                          "holds at most", here(c), INT32_MAX);
      }
      // A decimal's digits, which Arrow's decimals require to fit the
      // precision, as the data's are checked.
      uint8_t le[32];
      if (rc == 0 && n->logical == AVRO_LOGICAL_DECIMAL &&
          (sl_decimal_from_be(tmp.data, (int64_t)tmp.size, 32, le) != 0 ||
           !sl_decimal_fits(le, 32, n->precision))) {
        rc = sl_error_set(e, EINVAL, "reader schema: field '%s': default decimal has more "
                          "digits than its precision %" PRId32, here(c), n->precision);
      }
      if (rc == 0 && n->kind == AVRO_BYTES) rc = put_long(b, (int64_t)tmp.size, a, e);
      if (rc == 0) rc = put(b, tmp.data, tmp.size, a, e);
      sl_avro_buf_release(&tmp, a);
      return rc;
    }
    case AVRO_ENUM:
      if (!json_is_string(j)) return bad_default(c, n);
      for (int64_t i = 0; i < n->n; ++i)
        if (strcmp(n->names[i], json_string_value(j)) == 0) return put_long(b, i, a, e);
      return bad_default(c, n);
    case AVRO_ARRAY: {
      if (!json_is_array(j)) return bad_default(c, n);
      size_t k = json_array_size(j);
      if (k > 0) {
        SL_RETURN_NOT_OK(put_long(b, (int64_t)k, a, e));
        for (size_t i = 0; i < k; ++i)
          SL_RETURN_NOT_OK(encode_default(c, n->items[0], json_array_get(j, i), b));
      }
      return put_long(b, 0, a, e);
    }
    case AVRO_MAP: {
      if (!json_is_object(j)) return bad_default(c, n);
      if (json_object_size(j) > 0) {
        SL_RETURN_NOT_OK(put_long(b, (int64_t)json_object_size(j), a, e));
        const char* key;
        json_t* v;
        json_object_foreach(j, key, v) {
          SL_RETURN_NOT_OK(put_long(b, (int64_t)strlen(key), a, e));
          SL_RETURN_NOT_OK(put(b, key, strlen(key), a, e));
          SL_RETURN_NOT_OK(encode_default(c, n->items[0], v, b));
        }
      }
      return put_long(b, 0, a, e);
    }
    case AVRO_RECORD:
      if (!json_is_object(j)) return bad_default(c, n);
      for (int64_t i = 0; i < n->n; ++i) {
        json_t* v = json_object_get(j, n->names[i]);
        if (v == NULL) v = json_object_get((json_t*)n->fields[i], "default");
        if (v == NULL) return bad_default(c, n);
        SL_RETURN_NOT_OK(encode_default(c, n->items[i], v, b));
      }
      return 0;
    default:
      // A union's default is a value of the first branch it matches (Avro
      // 1.12, AVRO-3649; it had to be the first branch's before).
      for (int64_t i = 0; i < n->n; ++i) {
        const size_t size = b->size;
        SL_RETURN_NOT_OK(put_long(b, i, a, e));
        int rc = encode_default(c, n->items[i], j, b);
        if (rc == 0) return 0;
        if (rc != EINVAL) return rc;  // out of memory, too large
        b->size = size;  // not a value of this branch: try the next
      }
      return sl_error_set(e, EINVAL, "reader schema: field '%s': default is a value of no "
                          "branch of the union", here(c));
  }
}

/* ---- resolution ----------------------------------------------------------------- */

static int resolve(struct rctx* c, const struct avro_node* w, const struct avro_node* r,
                   int32_t* out);

static int op_for(struct rctx* c, uint8_t kind, int64_t n_kids, const struct avro_node* r,
                  int64_t min_size, int32_t* out) {
  int32_t op = sl_avro_program_new_op(c->p, kind, n_kids, r);
  if (op < 0) return sl_avro_program_too_big(c->p, c->error);
  c->p->ops[op].min_size = min_size;
  *out = op;
  return 0;
}

/// Whether the schema object `obj` (a reader field, or a reader's named
/// type; NULL: none) lists `name` among its aliases; `unqualified`: an
/// alias's name without its namespace is compared (a named type's aliases
/// may be full names), else the whole alias (a field's).
static int lists_alias(const json_t* obj, const char* name, int unqualified) {
  json_t* aliases = obj != NULL ? json_object_get((json_t*)obj, "aliases") : NULL;
  size_t i;
  json_t* a;
  json_array_foreach(aliases, i, a) {
    const char* alias = json_string_value(a);
    if (alias == NULL) continue;
    const char* dot = unqualified ? strrchr(alias, '.') : NULL;
    if (strcmp(dot != NULL ? dot + 1 : alias, name) == 0) return 1;
  }
  return 0;
}

/// The reader's field names (value: the field) and its fields' aliases
/// (value: the last field to list one: fastavro and Java Avro keep the
/// last), hashed: searching them for each writer field was quadratic.
static int index_reader_fields(const struct avro_node* r, struct sl_name_set* names,
                               struct sl_name_set* aliases) {
  for (int64_t j = 0; j < r->n; ++j) {
    SL_RETURN_NOT_OK(sl_name_set_put(names, r->names[j], j));  // distinct: the parser checks
    json_t* list = r->fields[j] != NULL ? json_object_get((json_t*)r->fields[j], "aliases")
                                        : NULL;
    size_t i;
    json_t* a;
    json_array_foreach(list, i, a) {
      const char* alias = json_string_value(a);
      if (alias != NULL) SL_RETURN_NOT_OK(sl_name_set_put(aliases, alias, j));
    }
  }
  return 0;
}

/// Each writer field's reader field (reader_of[k], -1: skipped): the one of
/// its name, else the one that lists it among its aliases, as fastavro
/// matches them and Java Avro does for fields that aliases swap (a reader a
/// with alias b and b with alias a read the writer's a and b as they are);
/// a reader field that takes none gets its default (taken[j] = 0). Two
/// writer fields that go to one reader field are an error (Java: a
/// duplicate field).
static int match_fields(struct rctx* c, const struct avro_node* w, const struct avro_node* r,
                        int64_t* reader_of, uint8_t* taken) {
  struct sl_name_set names, aliases;
  sl_name_set_init(&names, c->p->alloc);
  sl_name_set_init(&aliases, c->p->alloc);
  int rc = index_reader_fields(r, &names, &aliases);
  for (int64_t k = 0; rc == 0 && k < w->n; ++k) {
    int64_t j = sl_name_set_find(&names, w->names[k]);
    if (j < 0) j = sl_name_set_find(&aliases, w->names[k]);
    reader_of[k] = j;
    if (j < 0) continue;
    if (taken[j]) {
      int64_t i = 0;
      while (reader_of[i] != j) ++i;
      const size_t outer = strlen(c->field);
      enter_field(c, outer, r->names[j]);  // its path, as other messages give it
      rc = sl_error_set(c->error, EILSEQ, "reader schema: field '%s': the writer's fields "
                        "'%s' and '%s' both go to it (by name or alias)", here(c),
                        w->names[i], w->names[k]);
      break;
    }
    taken[j] = 1;
  }
  sl_name_set_release(&names);
  sl_name_set_release(&aliases);
  if (rc == ENOMEM) rc = sl_error_set(c->error, ENOMEM, "out of memory");
  return rc;
}

/// The error for reader field j that no writer field feeds and that has no
/// default; when the writer has a field of one of its aliases that went to
/// another reader field, it says so.
static int missing_field(struct rctx* c, const struct avro_node* w, const struct avro_node* r,
                         const int64_t* reader_of, int64_t j) {
  for (int64_t k = 0; k < w->n; ++k) {
    int64_t other = reader_of[k];
    if (other < 0 || other == j || !lists_alias(r->fields[j], w->names[k], 0)) continue;
    int by_name = strcmp(r->names[other], w->names[k]) == 0;
    return sl_error_set(c->error, EILSEQ, "reader schema: field '%s' has no default, and the "
                        "writer's field '%s', which it lists among its aliases, goes to field "
                        "'%s' (%s)", here(c), w->names[k], r->names[other],
                        by_name ? "a field of its name comes before aliases"
                                : "the last field to list it takes it");
  }
  return sl_error_set(c->error, EILSEQ, "reader schema: field '%s' is not in the writer's "
                      "schema and has no default", here(c));
}

static int resolve_matched_record(struct rctx* c, const struct avro_node* w,
                                  const struct avro_node* r, const int64_t* reader_of,
                                  const uint8_t* taken, int32_t* out);

static int resolve_record(struct rctx* c, const struct avro_node* w, const struct avro_node* r,
                          int32_t* out) {
  struct avro_program* p = c->p;
  const size_t n_w = (size_t)(w->n > 0 ? w->n : 1), n_r = (size_t)(r->n > 0 ? r->n : 1);
  int64_t* reader_of = sl_calloc(p->alloc, n_w, sizeof *reader_of);
  uint8_t* taken = sl_calloc(p->alloc, n_r, 1);
  int rc = reader_of == NULL || taken == NULL ? sl_error_set(c->error, ENOMEM, "out of memory")
                                               : 0;
  if (rc == 0) rc = match_fields(c, w, r, reader_of, taken);
  if (rc == 0) rc = resolve_matched_record(c, w, r, reader_of, taken, out);
  if (reader_of != NULL) sl_free(p->alloc, reader_of, n_w * sizeof *reader_of);
  if (taken != NULL) sl_free(p->alloc, taken, n_r);
  return rc;
}

static int resolve_matched_record(struct rctx* c, const struct avro_node* w,
                                  const struct avro_node* r, const int64_t* reader_of,
                                  const uint8_t* taken, int32_t* out) {
  struct avro_program* p = c->p;
  int64_t n_defaults = 0;
  for (int64_t j = 0; j < r->n; ++j) n_defaults += !taken[j];
  int32_t op = 0;
  SL_RETURN_NOT_OK(op_for(c, OP_RECORD, w->n + n_defaults, r, 0, &op));
  p->ops[op].writer = w;  // the kids follow the writer's fields: errors name them by it
  const size_t outer = strlen(c->field);
  int64_t min_size = 0, slot = 0;
  for (int64_t k = 0; k < w->n; ++k, ++slot) {
    int64_t j = reader_of[k];
    int32_t kid = 0;
    enter_field(c, outer, w->names[k]);
    if (j >= 0) SL_RETURN_NOT_OK(resolve(c, w->items[k], r->items[j], &kid));
    else SL_RETURN_NOT_OK(sl_avro_program_emit(p, w->items[k], &kid, c->error));  // skipped
    p->kids[p->ops[op].kids + slot] = kid;
    p->targets[p->ops[op].kids + slot] = j >= 0 ? (int32_t)j : -1;
    min_size += p->ops[kid].min_size;
  }
  for (int64_t j = 0; j < r->n; ++j) {
    if (taken[j]) continue;
    enter_field(c, outer, r->names[j]);
    json_t* def = json_object_get((json_t*)r->fields[j], "default");
    if (def == NULL) return missing_field(c, w, r, reader_of, j);
    struct avro_buf bytes = {0};
    int rc = encode_default(c, r->items[j], def, &bytes);
    int64_t off = rc == 0 ? sl_avro_program_pool_add(p, bytes.data, (int64_t)bytes.size) : 0;
    sl_avro_buf_release(&bytes, p->alloc);
    if (rc == 0 && off < 0) rc = sl_error_set(c->error, ENOMEM, "out of memory");
    SL_RETURN_NOT_OK(rc);
    int64_t len = p->n_pool - off;
    int32_t d = 0, kid = 0;
    SL_RETURN_NOT_OK(op_for(c, OP_DEFAULT, 1, r->items[j], 0, &d));
    p->ops[d].pool_off = off;
    p->ops[d].pool_len = len;
    SL_RETURN_NOT_OK(sl_avro_program_emit(p, r->items[j], &kid, c->error));
    p->kids[p->ops[d].kids] = kid;
    p->kids[p->ops[op].kids + slot] = d;
    p->targets[p->ops[op].kids + slot] = (int32_t)j;
    ++slot;
  }
  c->field[outer] = '\0';
  p->ops[op].min_size = min_size > INT32_MAX ? INT32_MAX : min_size;
  *out = op;
  return 0;
}

static int resolve_enum(struct rctx* c, const struct avro_node* w, const struct avro_node* r,
                        int32_t* out) {
  struct avro_program* p = c->p;
  int64_t off = -1;
  // The reader's symbols, hashed: searching them for each writer symbol was
  // quadratic (minutes for 1M symbols).
  struct sl_name_set syms;
  sl_name_set_init(&syms, p->alloc);
  int rc = 0;
  for (int64_t j = 0; rc == 0 && j < r->n; ++j) rc = sl_name_set_put(&syms, r->names[j], j);
  for (int64_t k = 0; rc == 0 && k < w->n; ++k) {
    int32_t m = (int32_t)sl_name_set_find(&syms, w->names[k]);  // distinct: the parser checks
    if (m < 0) m = (int32_t)(r->enum_default - 1);  // the reader's default, or still -1
    int64_t at = sl_avro_program_pool_add(p, &m, 4);
    if (at < 0) rc = ENOMEM;
    if (off < 0) off = at;
  }
  sl_name_set_release(&syms);
  if (rc != 0) return sl_error_set(c->error, ENOMEM, "out of memory");
  SL_RETURN_NOT_OK(op_for(c, OP_ENUM_MAP, 0, r, 1, out));
  p->ops[*out].writer = w;  // its symbols, for messages
  p->ops[*out].size = w->n;
  p->ops[*out].pool_off = off < 0 ? 0 : off;
  return 0;
}

static const char* short_name(const struct avro_node* n) {
  const char* dot = n->name ? strrchr(n->name, '.') : NULL;
  return dot ? dot + 1 : n->name ? n->name : "";
}

/// Whether two named types of one kind may resolve: the same unqualified
/// name, or the writer's among the reader type's aliases (the spec's rule).
/// An empty name (polars writes records so) agrees with any.
static int names_agree(const struct avro_node* w, const struct avro_node* r) {
  const char* wn = short_name(w);
  if (wn[0] == '\0' || short_name(r)[0] == '\0' || strcmp(wn, short_name(r)) == 0) return 1;
  return lists_alias(r->json, wn, 1);
}

/// Whether a writer type (not a union) matches a reader type (not a union):
/// exactly (same kind; named types by unqualified name, fixed by size too),
/// or by promotion when `promote`.
static int matches(const struct avro_node* w, const struct avro_node* r, int promote) {
  if (w->kind == r->kind) {
    if (w->kind == AVRO_RECORD || w->kind == AVRO_ENUM || w->kind == AVRO_FIXED) {
      if (!names_agree(w, r)) return 0;
      return w->kind != AVRO_FIXED || w->size == r->size;
    }
    return 1;
  }
  if (!promote) return 0;
  switch (w->kind) {
    case AVRO_INT: return r->kind == AVRO_LONG || r->kind == AVRO_FLOAT || r->kind == AVRO_DOUBLE;
    case AVRO_LONG: return r->kind == AVRO_FLOAT || r->kind == AVRO_DOUBLE;
    case AVRO_FLOAT: return r->kind == AVRO_DOUBLE;
    case AVRO_STRING: return r->kind == AVRO_BYTES;
    case AVRO_BYTES: return r->kind == AVRO_STRING;
    default: return 0;
  }
}

/// A named type whose full name (namespace included) is the other's.
static int same_full_name(const struct avro_node* w, const struct avro_node* r) {
  return w->name != NULL && r->name != NULL && strcmp(w->name, r->name) == 0;
}

/// The reader union's branch a writer type resolves to, or -1: as Java
/// does, an exact match first (a named type by its full name, so that a.X
/// and b.X in one union stay apart), then one by unqualified name or alias,
/// then by promotion.
static int64_t branch_for(const struct avro_node* w, const struct avro_node* r) {
  const int named = w->kind == AVRO_RECORD || w->kind == AVRO_ENUM || w->kind == AVRO_FIXED;
  for (int64_t j = 0; j < r->n; ++j)
    if (matches(w, r->items[j], 0) && (!named || same_full_name(w, r->items[j]))) return j;
  for (int promote = 0; promote < 2; ++promote)
    for (int64_t j = 0; j < r->n; ++j)
      if (matches(w, r->items[j], promote)) return j;
  return -1;
}

/// Writer union branch k of union op `op` matches a reader type whose
/// inner types do not resolve (the error just set, EILSEQ): the branch fails
/// only when a value takes it, with this reason, kept in the pool. The op's
/// pool_off is then a table of an int64 pool offset of a message per branch
/// (-1: none), pool_len its size.
static int defer_branch_error(struct rctx* c, int32_t op, int64_t k) {
  struct avro_program* p = c->p;
  if (p->ops[op].pool_len == 0) {
    const int64_t none = -1;
    int64_t at = -1;
    for (int64_t i = 0; i < p->ops[op].n_kids; ++i) {
      int64_t o = sl_avro_program_pool_add(p, &none, sizeof none);
      if (o < 0) return sl_error_set(c->error, ENOMEM, "out of memory");
      if (at < 0) at = o;
    }
    p->ops[op].pool_off = at;
    p->ops[op].pool_len = p->ops[op].n_kids * (int64_t)sizeof none;
  }
  const char* why = c->error->message;
  if (strncmp(why, "reader schema: ", 15) == 0) why += 15;
  int64_t off = sl_avro_program_pool_add(p, why, (int64_t)strlen(why) + 1);
  if (off < 0) return sl_error_set(c->error, ENOMEM, "out of memory");
  memcpy(p->pool + p->ops[op].pool_off + k * (int64_t)sizeof off, &off, sizeof off);
  return 0;
}

/// A writer union: each branch resolves to a reader branch (reader union) or
/// to the reader type itself (`one`, the value type of a nullable reader,
/// whose nulls the writer's null branch fills); branches that cannot, at
/// the top or deeper in (an array of int read as an array of string), are
/// kept for skipping and fail only if the data uses them.
static int resolve_writer_union(struct rctx* c, const struct avro_node* w,
                                const struct avro_node* r, const struct avro_node* one,
                                int32_t* out) {
  struct avro_program* p = c->p;
  int32_t op = 0;
  SL_RETURN_NOT_OK(op_for(c, one ? OP_UNION_TO_ONE : OP_UNION_MAP, w->n, r, 1, &op));
  const size_t path = strlen(c->field);
  for (int64_t k = 0; k < w->n; ++k) {
    const struct avro_node* wb = w->items[k];
    int64_t t = -1;
    int32_t kid = 0;
    int rc = 0;
    if (one != NULL) {
      if (wb->kind == AVRO_NULL && r != one) t = 0;  // the reader is nullable: a null
      else if (matches(wb, one, 1)) t = 0;
      if (t == 0 && wb->kind == AVRO_NULL && r != one) SL_RETURN_NOT_OK(sl_avro_program_emit(p, wb, &kid, c->error));
      else if (t == 0) rc = resolve(c, wb, one, &kid);
    } else {
      t = branch_for(wb, r);
      if (t >= 0) rc = resolve(c, wb, r->items[t], &kid);
    }
    c->field[path] = '\0';  // an error left it inside the branch
    if (rc == EILSEQ) {
      SL_RETURN_NOT_OK(defer_branch_error(c, op, k));
      t = -1;
    } else if (rc != 0) {
      return rc;
    }
    if (t < 0) SL_RETURN_NOT_OK(sl_avro_program_emit(p, wb, &kid, c->error));  // for skipping
    p->kids[p->ops[op].kids + k] = kid;
    p->targets[p->ops[op].kids + k] = (int32_t)t;
  }
  *out = op;
  return 0;
}

static int resolve(struct rctx* c, const struct avro_node* w, const struct avro_node* r,
                   int32_t* out) {
  struct avro_program* p = c->p;
  const struct avro_node *wv, *rv;
  int wni, rni;
  int wn = sl_avro_node_nullable(w, &wv, &wni), rn = sl_avro_node_nullable(r, &rv, &rni);
  // Nullable into nullable whose values do not match: the nulls still read,
  // and a value fails only when the data has one (the general union path).
  if (wn && rn && !matches(wv, rv, 1)) return resolve_writer_union(c, w, r, rv, out);
  if (wn && (rn || r->kind != AVRO_UNION)) {
    int32_t op = 0, kid = 0;
    SL_RETURN_NOT_OK(op_for(c, OP_NULLABLE, 1, r, 1, &op));
    p->ops[op].null_index = (int8_t)wni;
    p->ops[op].null_error = !rn;
    const size_t path = strlen(c->field);
    int rc = resolve(c, wv, rn ? rv : r, &kid);
    // Types that match but whose inner types do not resolve (a map of long
    // read as a map of int): the general path, where that branch fails only
    // when a value takes it (this op is left unused).
    if (rc == EILSEQ) {
      c->field[path] = '\0';
      return resolve_writer_union(c, w, r, rn ? rv : r, out);
    }
    SL_RETURN_NOT_OK(rc);
    p->kids[p->ops[op].kids] = kid;
    *out = op;
    return 0;
  }
  if (w->kind == AVRO_UNION) {
    // A general writer union: into a reader union (dense, or nullable) or one type.
    if (rn) return resolve_writer_union(c, w, r, rv, out);
    if (r->kind == AVRO_UNION) return resolve_writer_union(c, w, r, NULL, out);
    return resolve_writer_union(c, w, r, r, out);
  }
  if (rn) {
    // The writer's "null" type: all nulls, which the reader's null branch
    // takes; any other type is never null (the builder is nullable anyway).
    if (w->kind == AVRO_NULL) return op_for(c, OP_NULL, 0, r, 0, out);
    return resolve(c, w, rv, out);
  }
  if (r->kind == AVRO_UNION) {
    int64_t j = branch_for(w, r);
    if (j < 0) return cannot(c, w, r, "no branch of the reader's union matches");
    int32_t op = 0, kid = 0;
    SL_RETURN_NOT_OK(op_for(c, OP_TO_BRANCH, 1, r, 0, &op));
    p->ops[op].size = j;
    SL_RETURN_NOT_OK(resolve(c, w, r->items[j], &kid));
    p->kids[p->ops[op].kids] = kid;
    // No union index is read (the writer's type is not a union): the value
    // takes what its branch's takes, nothing for a null or an empty record.
    p->ops[op].min_size = p->ops[kid].min_size;
    *out = op;
    return 0;
  }
  enum avro_kind wk = w->kind, rk = r->kind;
  if (wk == AVRO_INT && rk != AVRO_INT) {
    uint8_t k = rk == AVRO_LONG ? OP_INT_AS_LONG : rk == AVRO_FLOAT ? OP_INT_AS_FLOAT
                : rk == AVRO_DOUBLE ? OP_INT_AS_DOUBLE : 0;
    if (k == 0) return cannot(c, w, r, NULL);
    SL_RETURN_NOT_OK(op_for(c, k, 0, r, 1, out));
    // A time-micros reader checks the time of day as a direct read does
    // (op size: the day's length).
    if (k == OP_INT_AS_LONG && r->logical == AVRO_LOGICAL_TIME_US)
      p->ops[*out].size = INT64_C(86400000000);
    return 0;
  }
  if (wk == AVRO_LONG && (rk == AVRO_FLOAT || rk == AVRO_DOUBLE))
    return op_for(c, rk == AVRO_FLOAT ? OP_LONG_AS_FLOAT : OP_LONG_AS_DOUBLE, 0, r, 1, out);
  if (wk == AVRO_FLOAT && rk == AVRO_DOUBLE) return op_for(c, OP_FLOAT_AS_DOUBLE, 0, r, 4, out);
  int text_swap = (wk == AVRO_STRING || wk == AVRO_BYTES) && (rk == AVRO_STRING || rk == AVRO_BYTES);
  if (wk != rk && !text_swap) return cannot(c, w, r, NULL);
  if ((rk == AVRO_RECORD || rk == AVRO_ENUM || rk == AVRO_FIXED) && !names_agree(w, r)) {
    char why[300];
    snprintf(why, sizeof why, "the writer's type is named '%s', the reader's '%s', which has no "
             "such alias", short_name(w), short_name(r));
    return cannot(c, w, r, why);
  }
  // The spec: two decimals match only if their scales (and precisions)
  // match. Another scale would read each unscaled integer as another number
  // (12.34 as 0.1234), so it is an error; another precision reads, each
  // value checked against the reader's.
  if (w->logical == AVRO_LOGICAL_DECIMAL && r->logical == AVRO_LOGICAL_DECIMAL &&
      w->scale != r->scale) {
    return sl_error_set(c->error, EILSEQ, "reader schema: field '%s': cannot read the writer's "
                        "decimal(%d, %d) as decimal(%d, %d): decimals of different scales do "
                        "not match (Avro spec)", here(c), (int)w->precision, (int)w->scale,
                        (int)r->precision, (int)r->scale);
  }
  switch (rk) {
    case AVRO_RECORD: return resolve_record(c, w, r, out);
    case AVRO_ENUM: return resolve_enum(c, w, r, out);
    case AVRO_FIXED:
      if (w->size != r->size) return cannot(c, w, r, "fixed sizes differ");
      return sl_avro_program_emit(p, r, out, c->error);
    case AVRO_ARRAY: case AVRO_MAP: {
      int32_t op = 0, kid = 0;
      SL_RETURN_NOT_OK(op_for(c, rk == AVRO_ARRAY ? OP_ARRAY : OP_MAP, 1, r, 1, &op));
      SL_RETURN_NOT_OK(resolve(c, w->items[0], r->items[0], &kid));
      p->kids[p->ops[op].kids] = kid;
      *out = op;
      return 0;
    }
    default:  // same primitive (or string/bytes): the reader's logical type decides the op
      return sl_avro_program_emit(p, r, out, c->error);
  }
}

int sl_avro_program_build_resolved(const struct avro_schema* w, const struct avro_schema* r,
                                struct avro_program* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  out->alloc = w->alloc;
  struct rctx c = {out, error, ""};
  int rc;
  int32_t top = 0;
  if (w->root->kind == AVRO_UNION && r->root->kind == AVRO_RECORD) {
    // A top-level union (["null", R]) read as a record: rows of its record
    // branch read as the reader's record (columns of its fields); a row of
    // another branch is an error when met, as in Java and fastavro.
    int64_t k = -1;
    for (int64_t i = 0; i < w->root->n && k < 0; ++i)
      if (matches(w->root->items[i], r->root, 0) && same_full_name(w->root->items[i], r->root)) k = i;
    for (int64_t i = 0; i < w->root->n && k < 0; ++i)
      if (matches(w->root->items[i], r->root, 0)) k = i;
    if (k < 0) {
      rc = cannot(&c, w->root, r->root, "no branch of the writer's union is a record that "
                  "matches it");
    } else {
      rc = resolve(&c, w->root->items[k], r->root, &top);
      out->root_branch = k + 1;
      out->root_union = w->root;
      if (rc == 0) out->ops[top].min_size = 1;  // the union index (then a null takes no more)
    }
  } else if (w->root->kind == AVRO_RECORD && r->root->kind == AVRO_RECORD) {
    rc = resolve(&c, w->root, r->root, &top);
  } else if (r->root->kind == AVRO_RECORD) {
    rc = cannot(&c, w->root, r->root, NULL);
  } else {
    // A non-record reader root (a record read as ["null", R] too): one
    // column "value", as without a reader schema.
    top = sl_avro_program_new_op(out, OP_RECORD, 1, NULL);
    int32_t kid = 0;
    rc = top < 0 ? sl_avro_program_too_big(out, error) : resolve(&c, w->root, r->root, &kid);
    if (rc == 0) out->kids[out->ops[top].kids] = kid;
    if (rc == 0) out->ops[top].min_size = out->ops[kid].min_size;  // a row takes what its value takes
  }
  if (rc != 0) sl_avro_program_release(out);
  return rc;
}
