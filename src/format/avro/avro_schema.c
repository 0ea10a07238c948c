// The Avro writer schema: JSON (jansson) → a validated DAG of nodes → Arrow.
// Named types are shared by reference, so a reference to a type still being
// defined is recursion, which Arrow cannot represent: refused with a clear
// message rather than expanded forever.
#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "avro_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_name_set.h"
#include "core/sl_error.h"
#include "core/sl_value_tz.h"

// Nesting is counted in Arrow levels (the root record is 0; a record field,
// an array's items, a general union's branches add 1; a map's values 2; a
// ["null", T] union none; an enum's dictionary 1): at most 64, the builders'
// (and writers') limit, a non-record root's wrapper column counted too. Every
// parse_type call (unions, {"type": {...}} wrappers too) counts against
// AVRO_MAX_FRAMES, which bounds the recursion whatever the JSON.
#define AVRO_MAX_DEPTH 64
#define AVRO_MAX_FRAMES 256

struct named {
  const char* fullname;  // points into the node
  struct avro_node* node;
};

struct parse_ctx {
  struct avro_schema* s;
  struct named* named;
  int64_t n_named, cap_named;
  struct sluice_error* error;
  int frames;  ///< parse_type calls under way
  int deepest;  ///< the deepest Arrow level parsed so far
};

static struct avro_node* new_node(struct parse_ctx* c, enum avro_kind kind) {
  struct avro_schema* s = c->s;
  void* nodes = s->nodes;
  if (sl_grow_array(s->alloc,
                    &nodes, &s->cap_nodes, s->n_nodes + 1, sizeof *s->nodes) != 0) return NULL;
  s->nodes = nodes;
  struct avro_node* n = sl_calloc(s->alloc, 1, sizeof *n);
  if (n == NULL) return NULL;
  n->kind = kind;
  s->nodes[s->n_nodes++] = n;
  return n;
}

static void free_node(const struct sluice_allocator* alloc, struct avro_node* n) {
  if (n->name) sl_free(alloc, n->name, strlen(n->name) + 1);
  if (n->names) {
    for (int64_t i = 0; i < n->n; ++i)
      if (n->names[i]) sl_free(alloc, n->names[i], strlen(n->names[i]) + 1);
    sl_free(alloc, n->names, (size_t)n->n * sizeof *n->names);
  }
  if (n->fields) sl_free(alloc, n->fields, (size_t)n->n * sizeof *n->fields);
  if (n->items) {
    int64_t k = n->kind == AVRO_ARRAY || n->kind == AVRO_MAP ? 1 : n->n;
    sl_free(alloc, n->items, (size_t)k * sizeof *n->items);
  }
  sl_free(alloc, n, sizeof *n);
}

void sl_avro_schema_release(struct avro_schema* s) {
  if (s == NULL) return;
  for (int64_t i = 0; i < s->n_nodes; ++i) free_node(s->alloc, s->nodes[i]);
  if (s->nodes) sl_free(s->alloc, s->nodes, (size_t)s->cap_nodes * sizeof *s->nodes);
  if (s->json) json_decref((json_t*)s->json);
  s->json = NULL;
  s->nodes = NULL;
  s->n_nodes = s->cap_nodes = 0;
  s->root = NULL;
}

static int oom(struct parse_ctx* c) {
  return sl_error_set(c->error, ENOMEM, "out of memory parsing the Avro schema");
}

static int bad(struct parse_ctx* c, const char* what, const char* detail) {
  return sl_error_set(c->error, EILSEQ, "invalid Avro schema: %s%s%s", what,
                      detail ? ": " : "", detail ? detail : "");
}

static struct avro_node* lookup(struct parse_ctx* c, const char* name, const char* ns) {
  char full[512];
  if (strchr(name, '.') == NULL && ns != NULL && ns[0] != '\0') {
    snprintf(full, sizeof full, "%s.%s", ns, name);
    for (int64_t i = 0; i < c->n_named; ++i)
      if (strcmp(c->named[i].fullname, full) == 0) return c->named[i].node;
  }
  for (int64_t i = 0; i < c->n_named; ++i)
    if (strcmp(c->named[i].fullname, name) == 0) return c->named[i].node;
  return NULL;
}

/// The primitive kinds (null to string, in enum avro_kind's order) by name.
static int primitive_kind(const char* name, enum avro_kind* out) {
  for (int k = AVRO_NULL; k <= AVRO_STRING; ++k) {
    if (strcmp(sl_avro_kind_name((enum avro_kind)k), name) == 0) {
      *out = (enum avro_kind)k;
      return 1;
    }
  }
  return 0;
}

static int parse_type(struct parse_ctx* c, json_t* j, const char* ns, int depth,
                      struct avro_node** out);

/// Registers a named type: computes its full name and namespace (`ns_out`, a
/// buffer of 512) from "name"/"namespace" and the enclosing namespace.
static int define_named(struct parse_ctx* c, json_t* j, const char* ns, struct avro_node* n,
                        char* ns_out) {
  json_t* jn = json_object_get(j, "name");
  if (!json_is_string(jn)) return bad(c, "a named type has no \"name\"", NULL);
  n->json = j;
  const char* name = json_string_value(jn);
  json_t* jns = json_object_get(j, "namespace");
  const char* space = json_is_string(jns) ? json_string_value(jns) : ns;
  char full[512];
  // Names only identify types here, so any text is taken, as for field names
  // and enum symbols: Java 1.12 writes (and it and fastavro read) Unicode
  // letters (a record `Beträge`), and fastavro and Java read `1R` or `a-b`.
  if (name[0] == '\0') {
    if (n->kind != AVRO_RECORD) return bad(c, "empty type name", NULL);
    // polars writes these; the data is unambiguous as long as nothing refers
    // to the record by name, so accept it (noted in the schema metadata).
    c->s->empty_record_name = 1;
    full[0] = '\0';
    snprintf(ns_out, 512, "%s", space ? space : "");
  } else if (strchr(name, '.') != NULL) {
    if (strlen(name) >= sizeof full) return bad(c, "name too long", NULL);
    snprintf(full, sizeof full, "%s", name);
    const char* dot = strrchr(name, '.');
    snprintf(ns_out, 512, "%.*s", (int)(dot - name), name);
  } else {
    if (space && space[0] != '\0') {
      size_t ls = strlen(space), ln = strlen(name);
      if (ls + ln + 2 > sizeof full) return bad(c, "name too long", NULL);
      memcpy(full, space, ls);
      full[ls] = '.';
      memcpy(full + ls + 1, name, ln + 1);
    } else {
      if (strlen(name) >= sizeof full) return bad(c, "name too long", NULL);
      snprintf(full, sizeof full, "%s", name);
    }
    snprintf(ns_out, 512, "%s", space ? space : "");
  }
  if (full[0] != '\0' && lookup(c, full, NULL) != NULL) return bad(c, "type defined twice", full);
  n->name = sl_strdup(c->s->alloc, full);
  if (n->name == NULL) return oom(c);
  if (full[0] == '\0') return 0;
  void* named = c->named;
  if (sl_grow_array(c->s->alloc,
                    &named, &c->cap_named, c->n_named + 1, sizeof *c->named) != 0) return oom(c);
  c->named = named;
  c->named[c->n_named].fullname = n->name;
  c->named[c->n_named].node = n;
  c->n_named++;
  return 0;
}

static int json_int(json_t* j, int64_t lo, int64_t hi, int64_t* out) {
  if (!json_is_integer(j)) return 0;
  json_int_t v = json_integer_value(j);
  if (v < lo || v > hi) return 0;
  *out = (int64_t)v;
  return 1;
}

/// Applies "logicalType" when it is valid for the node; otherwise the node
/// keeps its underlying type, as the spec asks.
static void apply_logical(json_t* j, struct avro_node* n) {
  json_t* jl = json_object_get(j, "logicalType");
  if (!json_is_string(jl)) return;
  const char* l = json_string_value(jl);
  static const struct {
    const char* name;
    enum avro_kind kind;
    enum avro_logical logical;
  } k_simple[] = {
      {"date", AVRO_INT, AVRO_LOGICAL_DATE},
      {"time-millis", AVRO_INT, AVRO_LOGICAL_TIME_MS},
      {"time-micros", AVRO_LONG, AVRO_LOGICAL_TIME_US},
      {"timestamp-millis", AVRO_LONG, AVRO_LOGICAL_TS_MS},
      {"timestamp-micros", AVRO_LONG, AVRO_LOGICAL_TS_US},
      {"timestamp-nanos", AVRO_LONG, AVRO_LOGICAL_TS_NS},
      {"local-timestamp-millis", AVRO_LONG, AVRO_LOGICAL_LOCAL_TS_MS},
      {"local-timestamp-micros", AVRO_LONG, AVRO_LOGICAL_LOCAL_TS_US},
      {"local-timestamp-nanos", AVRO_LONG, AVRO_LOGICAL_LOCAL_TS_NS},
      {"uuid", AVRO_STRING, AVRO_LOGICAL_UUID},
  };
  for (size_t i = 0; i < sizeof k_simple / sizeof k_simple[0]; ++i)
    if (strcmp(l, k_simple[i].name) == 0 && n->kind == k_simple[i].kind) n->logical = k_simple[i].logical;
  if (strcmp(l, "uuid") == 0 && n->kind == AVRO_FIXED && n->size == 16) {
    n->logical = AVRO_LOGICAL_UUID;  // (Avro 1.12) read as arrow.uuid, as Parquet's UUID
  }
  if (strcmp(l, "duration") == 0 && n->kind == AVRO_FIXED && n->size == 12)
    n->logical = AVRO_LOGICAL_DURATION;
  if (strcmp(l, "decimal") == 0 && (n->kind == AVRO_BYTES || n->kind == AVRO_FIXED)) {
    int64_t p, s = 0;
    // Precision past decimal256's 76 digits: no Arrow decimal holds it, so
    // the underlying bytes or fixed are read (as for an invalid one).
    if (!json_int(json_object_get(j, "precision"), 1, 76, &p)) return;
    json_t* js = json_object_get(j, "scale");
    if (js != NULL && !json_int(js, 0, p, &s)) return;
    // A fixed wider than 32 bytes is fine: its extra leading bytes must be
    // sign extension (sl_builder_append_decimal_be checks), as in bytes.
    if (n->kind == AVRO_FIXED && n->size < 1) return;
    // The spec: a fixed of n bytes holds floor(log10(2^(8n-1) - 1)) digits at
    // most; a larger precision makes the logical type invalid (then the
    // fixed is read as fixed, as Java Avro does).
    if (n->kind == AVRO_FIXED && p > (int64_t)floor((8.0 * (double)n->size - 1) * log10(2.0))) return;
    n->logical = AVRO_LOGICAL_DECIMAL;
    n->precision = (int32_t)p;
    n->scale = (int32_t)s;
  }
}

/// A zone a timestamp's arrow_type may name: an offset as Arrow C++ takes
/// one ("+01:00", "+0100") or a zone of the tz database (a name Arrow
/// would refuse later is dropped).
static int known_zone(const char* zone, const struct sluice_allocator* alloc) {
  int32_t offset;
  if (strcmp(zone, "UTC") == 0) return 1;  // even without a tz database
  if (sl_tz_fixed_offset(zone, &offset)) return 1;
  struct sl_tz* tz = NULL;
  if (sl_tz_load(zone, alloc, &tz) != 0) return 0;
  sl_tz_free(tz);
  return 1;
}

/// Applies "sluice.arrow_type" (see avro_node.arrow_type) when it names a
/// type this node's values convert to exactly: int → int8/16, uint8/16;
/// long → uint32/64; float → float16; string → large_utf8; bytes →
/// large_binary; int date → date64; int time-millis → time32[s]; a
/// timestamp → one of its unit (or seconds, from millis) with a zone;
/// array → large_list or fixed_size_list. Anything else is ignored (the
/// usual mapping), as unknown logical types are.
static void apply_arrow_type(json_t* j, struct avro_node* n, const struct sluice_allocator* alloc) {
  json_t* ja = json_object_get(j, "sluice.arrow_type");
  if (!json_is_string(ja)) return;
  const char* f = json_string_value(ja);
  size_t len = strlen(f);
  if (len >= sizeof n->arrow_type) return;
  int ok = 0;
  enum avro_logical lt = n->logical;
  // (A uuid string may be a large one: the writer keeps the logical type.)
  if ((lt == AVRO_LOGICAL_NONE || (lt == AVRO_LOGICAL_UUID && n->kind == AVRO_STRING)) &&
      len == 1) {
    const char* allowed = n->kind == AVRO_INT ? "csCS" : n->kind == AVRO_LONG ? "IL"
                          : n->kind == AVRO_FLOAT ? "e" : n->kind == AVRO_STRING ? "U"
                          : n->kind == AVRO_BYTES ? "Z" : "";
    ok = strchr(allowed, f[0]) != NULL && f[0] != '\0';
  } else if (n->kind == AVRO_INT && lt == AVRO_LOGICAL_DATE) {
    ok = strcmp(f, "tdm") == 0;
  } else if (n->kind == AVRO_INT && lt == AVRO_LOGICAL_TIME_MS) {
    ok = strcmp(f, "tts") == 0;
  } else if (n->kind == AVRO_LONG && (lt == AVRO_LOGICAL_LOCAL_TS_MS)) {
    ok = strcmp(f, "tss:") == 0;
  } else if (n->kind == AVRO_LONG && (lt == AVRO_LOGICAL_TS_MS || lt == AVRO_LOGICAL_TS_US ||
                                      lt == AVRO_LOGICAL_TS_NS)) {
    char unit = lt == AVRO_LOGICAL_TS_MS ? 'm' : lt == AVRO_LOGICAL_TS_US ? 'u' : 'n';
    ok = len > 4 && f[0] == 't' && f[1] == 's' && (f[2] == unit || (f[2] == 's' && unit == 'm')) &&
         f[3] == ':';
    if (ok && !known_zone(f + 4, alloc)) {
      // A zone the tz database lacks reads as UTC, in the unit written.
      snprintf(n->arrow_type, sizeof n->arrow_type, "ts%c:UTC", f[2]);
      return;
    }
  } else if (n->kind == AVRO_ARRAY) {
    char* end = NULL;
    ok = strcmp(f, "+L") == 0 ||
         (strncmp(f, "+w:", 3) == 0 && isdigit((unsigned char)f[3]) &&
          strtol(f + 3, &end, 10) <= INT32_MAX && *end == '\0');
  }
  if (ok) snprintf(n->arrow_type, sizeof n->arrow_type, "%s", f);
}

static int parse_record(struct parse_ctx* c, json_t* j, const char* ns, int depth,
                        struct avro_node* n) {
  char inner_ns[512];
  SL_RETURN_NOT_OK(define_named(c, j, ns, n, inner_ns));
  json_t* fields = json_object_get(j, "fields");
  if (!json_is_array(fields)) return bad(c, "record without a \"fields\" array", n->name);
  size_t nf = json_array_size(fields);
  n->defining = 1;
  if (nf > 0) {
    n->n = (int64_t)nf;  // first: free_node sizes the arrays by it
    n->items = sl_calloc(c->s->alloc, nf, sizeof *n->items);
    n->names = sl_calloc(c->s->alloc, nf, sizeof *n->names);
    n->fields = sl_calloc(c->s->alloc, nf, sizeof *n->fields);
    if (n->items == NULL || n->names == NULL || n->fields == NULL) return oom(c);
  }
  // Names seen so far, hashed: a linear search each took minutes on 100k fields.
  struct sl_name_set seen;
  sl_name_set_init(&seen, c->s->alloc);
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < nf; ++i) {
    json_t* f = json_array_get(fields, i);
    json_t* fname = json_object_get(f, "name");
    if (!json_is_object(f) || !json_is_string(fname) || json_string_value(fname)[0] == '\0') {
      rc = bad(c, "record field without a name", n->name);
      break;
    }
    const char* name = json_string_value(fname);
    n->names[i] = sl_strdup(c->s->alloc, name);
    int64_t had = -1;
    if (n->names[i] == NULL || sl_name_set_add(&seen, n->names[i], (int64_t)i, &had) != 0) {
      rc = oom(c);
      break;
    }
    if (had >= 0) {
      rc = bad(c, "duplicate field name", name);
      break;
    }
    n->fields[i] = f;
    json_t* ft = json_object_get(f, "type");
    rc = ft == NULL ? bad(c, "record field without a type", name)
                    : parse_type(c, ft, inner_ns, depth + 1, &n->items[i]);
  }
  sl_name_set_release(&seen);
  if (rc != 0) return rc;
  n->defining = 0;
  return 0;
}

static int parse_enum(struct parse_ctx* c, json_t* j, const char* ns, struct avro_node* n) {
  char inner_ns[512];
  SL_RETURN_NOT_OK(define_named(c, j, ns, n, inner_ns));
  json_t* syms = json_object_get(j, "symbols");
  if (!json_is_array(syms)) return bad(c, "enum without a \"symbols\" array", n->name);
  size_t ns_ = json_array_size(syms);
  if (ns_ > INT32_MAX) return bad(c, "too many enum symbols", n->name);
  n->n = (int64_t)ns_;
  if (ns_ > 0) {
    n->names = sl_calloc(c->s->alloc, ns_, sizeof *n->names);
    if (n->names == NULL) return oom(c);
  }
  // Symbols seen so far, hashed: a linear search each took minutes on 1M symbols.
  struct sl_name_set seen;
  sl_name_set_init(&seen, c->s->alloc);
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < ns_; ++i) {
    json_t* s = json_array_get(syms, i);
    if (!json_is_string(s)) {
      rc = bad(c, "enum symbol is not a string", n->name);
      break;
    }
    n->names[i] = sl_strdup(c->s->alloc, json_string_value(s));
    int64_t had = -1;
    if (n->names[i] == NULL || sl_name_set_add(&seen, n->names[i], (int64_t)i, &had) != 0)
      rc = oom(c);
    else if (had >= 0)
      rc = bad(c, "duplicate enum symbol", json_string_value(s));
  }
  sl_name_set_release(&seen);
  if (rc != 0) return rc;
  // The symbol a reader uses for writer symbols it lacks (schema resolution).
  json_t* def = json_object_get(j, "default");
  if (def != NULL) {
    if (!json_is_string(def)) return bad(c, "enum default is not a string", n->name);
    for (int64_t i = 0; i < n->n && n->enum_default == 0; ++i)
      if (strcmp(n->names[i], json_string_value(def)) == 0) n->enum_default = i + 1;
    if (n->enum_default == 0)
      return bad(c, "enum default is not one of its symbols", json_string_value(def));
  }
  return 0;
}

/// "null" or {"type": "null"}.
static int is_null_type(json_t* j) {
  if (json_is_object(j)) j = json_object_get(j, "type");
  return json_is_string(j) && strcmp(json_string_value(j), "null") == 0;
}

static int parse_union(struct parse_ctx* c, json_t* j, const char* ns, int depth,
                       struct avro_node** out) {
  size_t nb = json_array_size(j);
  if (nb == 0) return bad(c, "empty union", NULL);
  if (nb > 127) return bad(c, "union with more than 127 branches", NULL);
  struct avro_node* n = new_node(c, AVRO_UNION);
  if (n == NULL) return oom(c);
  n->items = sl_calloc(c->s->alloc, nb, sizeof *n->items);
  if (n->items == NULL) return oom(c);
  n->n = (int64_t)nb;
  // ["null", T] is T's own Arrow column (nullable): no level of its own.
  const int nullable = nb == 2 && (is_null_type(json_array_get(j, 0)) ||
                                   is_null_type(json_array_get(j, 1)));
  for (size_t i = 0; i < nb; ++i) {
    SL_RETURN_NOT_OK(parse_type(c, json_array_get(j, i), ns, depth + !nullable, &n->items[i]));
    const struct avro_node* b = n->items[i];
    if (b->kind == AVRO_UNION) return bad(c, "a union directly inside a union", NULL);
    for (size_t k = 0; k < i; ++k) {
      const struct avro_node* o = n->items[k];
      int same = o->kind == b->kind && (b->name == NULL || strcmp(o->name, b->name) == 0);
      if (same) return bad(c, "a union lists the same type twice", b->name);
    }
  }
  *out = n;
  return 0;
}

static int parse_type_at(struct parse_ctx* c, json_t* j, const char* ns, int depth,
                         struct avro_node** out);

/// Valid Avro, but past what sluice reads (Arrow's and its builders' depth).
static int too_deep(struct parse_ctx* c) {
  return sl_error_set(c->error, ENOTSUP, "the schema nests types deeper than sluice's limit "
                      "of %d levels (records, arrays, maps, enums, unions other than "
                      "[\"null\", T])", AVRO_MAX_DEPTH);
}

static int parse_type(struct parse_ctx* c, json_t* j, const char* ns, int depth,
                      struct avro_node** out) {
  if (depth > AVRO_MAX_DEPTH || c->frames >= AVRO_MAX_FRAMES) return too_deep(c);
  if (depth > c->deepest) c->deepest = depth;
  ++c->frames;
  int rc = parse_type_at(c, j, ns, depth, out);
  --c->frames;
  return rc;
}

static int parse_type_at(struct parse_ctx* c, json_t* j, const char* ns, int depth,
                         struct avro_node** out) {
  enum avro_kind kind;
  if (json_is_string(j)) {
    const char* name = json_string_value(j);
    if (primitive_kind(name, &kind)) {
      *out = new_node(c, kind);
      return *out ? 0 : oom(c);
    }
    struct avro_node* ref = lookup(c, name, ns);
    if (ref == NULL) return bad(c, "unknown type", name);
    if (ref->defining)
      return sl_error_set(c->error, EILSEQ, "recursive Avro type '%s' cannot be represented "
                          "in Arrow", name);
    *out = ref;
    return 0;
  }
  if (json_is_array(j)) return parse_union(c, j, ns, depth, out);
  if (!json_is_object(j)) return bad(c, "a type is neither a name, an array nor an object", NULL);
  json_t* jt = json_object_get(j, "type");
  if (json_is_object(jt) || json_is_array(jt)) return parse_type(c, jt, ns, depth, out);  // a wrapper
  if (!json_is_string(jt)) return bad(c, "an object type without a \"type\"", NULL);
  const char* t = json_string_value(jt);
  struct avro_node* n;
  if (primitive_kind(t, &kind)) {
    if ((n = new_node(c, kind)) == NULL) return oom(c);
    apply_logical(j, n);
    apply_arrow_type(j, n, c->s->alloc);
  } else if (strcmp(t, "record") == 0 || strcmp(t, "error") == 0) {
    if ((n = new_node(c, AVRO_RECORD)) == NULL) return oom(c);
    SL_RETURN_NOT_OK(parse_record(c, j, ns, depth, n));
  } else if (strcmp(t, "enum") == 0) {
    // Read as an Arrow dictionary: its values are one level further down.
    if (depth + 1 > AVRO_MAX_DEPTH) return too_deep(c);
    if (depth + 1 > c->deepest) c->deepest = depth + 1;
    if ((n = new_node(c, AVRO_ENUM)) == NULL) return oom(c);
    SL_RETURN_NOT_OK(parse_enum(c, j, ns, n));
  } else if (strcmp(t, "fixed") == 0) {
    if ((n = new_node(c, AVRO_FIXED)) == NULL) return oom(c);
    char inner_ns[512];
    SL_RETURN_NOT_OK(define_named(c, j, ns, n, inner_ns));
    if (!json_int(json_object_get(j, "size"), 0, INT32_MAX, &n->size))
      return bad(c, "fixed without a valid \"size\"", n->name);
    apply_logical(j, n);
  } else if (strcmp(t, "array") == 0 || strcmp(t, "map") == 0) {
    int is_map = t[0] == 'm';
    if ((n = new_node(c, is_map ? AVRO_MAP : AVRO_ARRAY)) == NULL) return oom(c);
    json_t* it = json_object_get(j, is_map ? "values" : "items");
    if (it == NULL) return bad(c, is_map ? "map without \"values\"" : "array without \"items\"", NULL);
    n->items = sl_calloc(c->s->alloc, 1, sizeof *n->items);
    if (n->items == NULL) return oom(c);
    n->n = 1;
    // A map's values are in its entries' struct: two levels down.
    SL_RETURN_NOT_OK(parse_type(c, it, ns, depth + 1 + is_map, &n->items[0]));
    if (!is_map) apply_arrow_type(j, n, c->s->alloc);
    // A map's keys are strings; "sluice.arrow_key_type": "U" (sluice's
    // writer, for large_string keys) gives them back large.
    json_t* key_type = is_map ? json_object_get(j, "sluice.arrow_key_type") : NULL;
    if (json_is_string(key_type) && strcmp(json_string_value(key_type), "U") == 0)
      snprintf(n->arrow_type, sizeof n->arrow_type, "U");
  } else {
    struct avro_node* ref = lookup(c, t, ns);
    if (ref == NULL) return bad(c, "unknown type", t);
    if (ref->defining)
      return sl_error_set(c->error, EILSEQ, "recursive Avro type '%s' cannot be represented "
                          "in Arrow", t);
    n = ref;
  }
  *out = n;
  return 0;
}

/// The first string outside a "default" or "doc" that holds a NUL (\u0000),
/// or NULL. Bytes and fixed defaults are strings of code points 0-255, so
/// the schema is loaded with NULs allowed; everywhere else the parser reads
/// strings as C strings, and a NUL would cut a name short unseen.
static const char* string_with_nul(json_t* j) {
  if (json_is_string(j))
    return strlen(json_string_value(j)) != json_string_length(j) ? json_string_value(j) : NULL;
  if (json_is_array(j)) {
    size_t i;
    json_t* v;
    json_array_foreach(j, i, v) {
      const char* bad = string_with_nul(v);
      if (bad != NULL) return bad;
    }
  } else if (json_is_object(j)) {
    const char* key;
    json_t* v;
    json_object_foreach(j, key, v) {
      if (strcmp(key, "default") == 0 || strcmp(key, "doc") == 0) continue;
      const char* bad = string_with_nul(v);
      if (bad != NULL) return bad;
    }
  }
  return NULL;
}

int sl_avro_schema_parse(const char* json, size_t n, const struct sluice_allocator* alloc,
                      struct avro_schema* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  out->alloc = alloc;
  json_error_t jerr;
  json_t* root = json_loadb(json, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  // jansson keeps object keys as C strings: a map default's key with a NUL
  // (valid JSON, which fastavro and Java take) cannot be read.
  if (root == NULL && json_error_code(&jerr) == json_error_null_byte_in_key)
    return sl_error_set(error, ENOTSUP, "the schema has an object key holding a NUL character "
                        "(\\u0000), such as a map default's key, which sluice cannot read (line "
                        "%d column %d: %s)", jerr.line, jerr.column, jerr.text);
  // Valid JSON nested past jansson's parser depth is past sluice's own
  // type depth too: say that, not "not valid JSON".
  if (root == NULL && json_error_code(&jerr) == json_error_stack_overflow)
    return sl_error_set(error, ENOTSUP, "the schema nests deeper than the JSON parser's limit of "
                        "%d levels (line %d column %d); sluice reads types nested at most %d "
                        "deep", JSON_PARSER_MAX_DEPTH, jerr.line, jerr.column, AVRO_MAX_DEPTH);
  if (root == NULL)
    return sl_error_set(error, EILSEQ, "the schema is not valid JSON (line %d column %d: %s)",
                        jerr.line, jerr.column, jerr.text);
  const char* nul = string_with_nul(root);
  if (nul != NULL) {
    int rc = sl_error_set(error, EILSEQ, "the schema string \"%s...\" holds a NUL character "
                          "(\\u0000), allowed only in defaults", nul);
    json_decref(root);  // after the message: `nul` points into it
    return rc;
  }
  struct parse_ctx c = {.s = out, .error = error};
  out->json = root;  // field defaults point into it
  int rc = parse_type(&c, root, "", 0, &out->root);
  // A non-record root is read as the single column of a wrapper row: one
  // level more.
  if (rc == 0 && out->root->kind != AVRO_RECORD && c.deepest + 1 > AVRO_MAX_DEPTH)
    rc = too_deep(&c);
  if (c.named) sl_free(alloc, c.named, (size_t)c.cap_named * sizeof *c.named);
  if (rc != 0) sl_avro_schema_release(out);
  return rc;
}

int sl_avro_node_nullable(const struct avro_node* node, const struct avro_node** value,
                       int* null_index) {
  if (node->kind != AVRO_UNION || node->n != 2) return 0;
  for (int i = 0; i < 2; ++i)
    if (node->items[i]->kind == AVRO_NULL && node->items[1 - i]->kind != AVRO_NULL) {
      *value = node->items[1 - i];
      *null_index = i;
      return 1;
    }
  return 0;
}

/* ---- Arrow schema ------------------------------------------------------------ */

const char* sl_avro_kind_name(enum avro_kind kind) {
  static const char* const k_kind_names[] = {
      "null", "boolean", "int", "long", "float", "double", "bytes", "string",
      "record", "enum", "array", "map", "union", "fixed"};
  return (unsigned)kind < sizeof k_kind_names / sizeof k_kind_names[0] ? k_kind_names[kind]
                                                                       : "?";
}

static const char* short_name(const struct avro_node* n) {
  if (n->name != NULL && n->name[0] != '\0') {
    const char* dot = strrchr(n->name, '.');
    return dot ? dot + 1 : n->name;
  }
  return sl_avro_kind_name(n->kind);
}

static void simple_format(const struct avro_node* n, char* f, size_t cap) {
  if (n->arrow_type[0] != '\0') {
    snprintf(f, cap, "%s", n->arrow_type);
    return;
  }
  switch (n->logical) {
    case AVRO_LOGICAL_DATE: snprintf(f, cap, "tdD"); return;
    case AVRO_LOGICAL_TIME_MS: snprintf(f, cap, "ttm"); return;
    case AVRO_LOGICAL_TIME_US: snprintf(f, cap, "ttu"); return;
    case AVRO_LOGICAL_TS_MS: snprintf(f, cap, "tsm:UTC"); return;
    case AVRO_LOGICAL_TS_US: snprintf(f, cap, "tsu:UTC"); return;
    case AVRO_LOGICAL_TS_NS: snprintf(f, cap, "tsn:UTC"); return;
    case AVRO_LOGICAL_LOCAL_TS_MS: snprintf(f, cap, "tsm:"); return;
    case AVRO_LOGICAL_LOCAL_TS_US: snprintf(f, cap, "tsu:"); return;
    case AVRO_LOGICAL_LOCAL_TS_NS: snprintf(f, cap, "tsn:"); return;
    case AVRO_LOGICAL_DURATION: snprintf(f, cap, "tin"); return;
    case AVRO_LOGICAL_DECIMAL:
      if (n->precision > 38) snprintf(f, cap, "d:%d,%d,256", (int)n->precision, (int)n->scale);
      else snprintf(f, cap, "d:%d,%d", (int)n->precision, (int)n->scale);
      return;
    default: break;
  }
  static const char* const k_formats[] = {"n", "b", "i", "l", "f", "g", "z", "u"};
  if (n->kind <= AVRO_STRING) snprintf(f, cap, "%s", k_formats[n->kind]);
  else if (n->kind == AVRO_FIXED) snprintf(f, cap, "w:%" PRId64, n->size);
  else if (n->kind == AVRO_ENUM) snprintf(f, cap, "i");
}

static int arrow_node(const struct avro_node* n, const char* name, int64_t flags,
                      const struct sluice_allocator* alloc, struct ArrowSchema* out,
                      struct sluice_error* error) {
  const struct avro_node* value;
  int null_index;
  if (sl_avro_node_nullable(n, &value, &null_index))
    return arrow_node(value, name, ARROW_FLAG_NULLABLE, alloc, out, error);
  if (n->kind == AVRO_NULL) flags |= ARROW_FLAG_NULLABLE;
  char format[600];
  int64_t n_children = 0;
  switch (n->kind) {
    case AVRO_RECORD: snprintf(format, sizeof format, "+s"); n_children = n->n; break;
    case AVRO_ARRAY:
      snprintf(format, sizeof format, "%s", n->arrow_type[0] != '\0' ? n->arrow_type : "+l");
      n_children = 1;
      break;
    case AVRO_MAP: snprintf(format, sizeof format, "+m"); n_children = 1; break;
    case AVRO_UNION: {
      int len = snprintf(format, sizeof format, "+ud:");
      for (int64_t i = 0; i < n->n; ++i)
        len += snprintf(format + len, sizeof format - (size_t)len, i ? ",%d" : "%d", (int)i);
      n_children = n->n;
      break;
    }
    default: simple_format(n, format, sizeof format); break;
  }
  SL_RETURN_NOT_OK(sl_schema_init(out, alloc, format, name, flags, n_children, error));
  switch (n->kind) {
    case AVRO_RECORD:
      for (int64_t i = 0; i < n->n; ++i)
        SL_RETURN_NOT_OK(arrow_node(n->items[i], n->names[i], 0, alloc, out->children[i], error));
      break;
    case AVRO_ARRAY:
      SL_RETURN_NOT_OK(arrow_node(n->items[0], "item", 0, alloc, out->children[0], error));
      break;
    case AVRO_MAP: {
      struct ArrowSchema* e = out->children[0];
      SL_RETURN_NOT_OK(sl_schema_init(e, alloc, "+s", "entries", 0, 2, error));
      SL_RETURN_NOT_OK(sl_schema_init(e->children[0], alloc, n->arrow_type[0] == 'U' ? "U" : "u",
                                      "key", 0, 0, error));
      SL_RETURN_NOT_OK(arrow_node(n->items[0], "value", 0, alloc, e->children[1], error));
      break;
    }
    case AVRO_UNION:
      for (int64_t i = 0; i < n->n; ++i)
        SL_RETURN_NOT_OK(arrow_node(n->items[i], short_name(n->items[i]), 0, alloc,
                                    out->children[i], error));
      break;
    case AVRO_FIXED:
      if (n->logical == AVRO_LOGICAL_UUID) {
        SL_RETURN_NOT_OK(sl_schema_set_extension(out, "arrow.uuid", error));
      }
      break;
    case AVRO_ENUM:
      SL_RETURN_NOT_OK(sl_schema_alloc_dictionary(out, error));
      SL_RETURN_NOT_OK(sl_schema_init(out->dictionary, alloc, "u", NULL, 0, 0, error));
      break;
    default: break;
  }
  return 0;
}

static void put_i32(char** p, int32_t v) {
  memcpy(*p, &v, 4);
  *p += 4;
}

static void put_str(char** p, const char* s, size_t n) {
  put_i32(p, (int32_t)n);
  memcpy(*p, s, n);
  *p += n;
}

int sl_avro_arrow_schema(const struct avro_schema* s, const char* json, size_t json_len,
                      const struct sl_buffer* user, int32_t n_user, struct ArrowSchema* out,
                      struct sluice_error* error) {
  const struct sluice_allocator* alloc = s->alloc;
  const struct avro_node* root = s->root;
  int is_record = root->kind == AVRO_RECORD;
  int rc = sl_schema_init(out, alloc, "+s", "", 0, is_record ? root->n : 1, error);
  for (int64_t i = 0; rc == 0 && i < (is_record ? root->n : 1); ++i)
    rc = arrow_node(is_record ? root->items[i] : root, is_record ? root->names[i] : "value", 0,
                    alloc, out->children[i], error);
  static const char k_key[] = "avro.schema";
  static const char k_warn_key[] = "sluice.warning";
  static const char k_warn[] = "the Avro schema has a record with an empty name";
  if (rc == 0 && (json_len > INT32_MAX - 4096 || user->size > INT32_MAX - 4096 - (int64_t)json_len))
    rc = sl_error_set(error, EILSEQ, "avro.schema and header metadata too large (%zu + %" PRId64
                      " bytes)", json_len, user->size);
  if (rc == 0) {
    size_t size = 4 + 8 + sizeof k_key + json_len + 8 + sizeof k_warn_key + sizeof k_warn +
                  (size_t)user->size;
    char* blob = sl_alloc(alloc, size);
    if (blob == NULL) {
      rc = sl_error_set(error, ENOMEM, "out of memory for schema metadata");
    } else {
      char* p = blob;
      put_i32(&p, (s->empty_record_name ? 2 : 1) + n_user);
      put_str(&p, k_key, sizeof k_key - 1);
      put_str(&p, json, json_len);
      if (user->size > 0) {
        memcpy(p, user->data, (size_t)user->size);
        p += user->size;
      }
      if (s->empty_record_name) {
        put_str(&p, k_warn_key, sizeof k_warn_key - 1);
        put_str(&p, k_warn, sizeof k_warn - 1);
      }
      rc = sl_schema_set_metadata(out, blob, error);
      sl_free(alloc, blob, size);
    }
  }
  if (rc != 0 && out->release != NULL) out->release(out);
  return rc;
}
