// The footer's "ARROW:schema" entry (base64 of an Arrow IPC Schema message,
// written by Arrow C++ writers) restores the Arrow types Parquet cannot
// express, following Arrow C++'s ApplyOriginalMetadata: a timestamp's time
// zone, large binary and lists, durations, decimal32/64/256,
// dictionaries, a map's sorted keys, and field metadata (extension types).
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_type.h"
#include "format/ipc/ipc_fbs.h"
#include "format/ipc/ipc_internal.h"
#include "pq_schema.h"

/// Standard base64 (padding optional). None of the C libraries sluice links
/// exposes a decoder, and this one is a dozen lines. Returns the byte count,
/// or -1 on a bad character.
static int64_t base64_decode(const uint8_t* in, int64_t n, uint8_t* out) {
  uint32_t acc = 0;
  int bits = 0;
  int64_t o = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t c = in[i];
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+' || c == '-') v = 62;
    else if (c == '/' || c == '_') v = 63;
    else if (c == '=' || c == '\n' || c == '\r') continue;
    else return -1;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (uint8_t)(acc >> bits);
    }
  }
  return o;
}

static int copy_metadata(struct pq_field* f, const struct ArrowSchema* o,
                         const struct sluice_allocator* alloc) {
  if (o->metadata == NULL) return 0;
  int64_t size = sl_metadata_size(o->metadata);
  if (size <= 0) return 0;
  char* m = sl_alloc(alloc, (size_t)size);
  if (m == NULL) return ENOMEM;
  memcpy(m, o->metadata, (size_t)size);
  if (f->metadata) sl_free(alloc, f->metadata, (size_t)f->metadata_size);
  f->metadata = m;
  f->metadata_size = size;
  return 0;
}

static int is_binary_like(const char* fmt) {
  return strcmp(fmt, "u") == 0 || strcmp(fmt, "U") == 0 || strcmp(fmt, "z") == 0 ||
         strcmp(fmt, "Z") == 0 || strcmp(fmt, "vu") == 0 || strcmp(fmt, "vz") == 0;
}

static int apply_leaf(struct pq_field* f, const struct ArrowSchema* o) {
  const char* of = o->format;
  if (o->dictionary != NULL) {
    // dictionary<int, string|binary>: decoded values are dictionary-encoded
    const char* vf = o->dictionary->format;
    if (f->conv == PQ_CONV_BINARY && (strcmp(vf, "u") == 0 || strcmp(vf, "z") == 0 ||
                                      strcmp(vf, "U") == 0 || strcmp(vf, "Z") == 0) &&
        strlen(of) == 1 && strchr("cCsSiIlL", of[0]) != NULL) {
      f->dict = 1;
      f->dict_ordered = (o->flags & ARROW_FLAG_DICTIONARY_ORDERED) != 0;
      strcpy(f->dict_index_format, of);
      f->format[0] = (char)(vf[0] == 'U' ? 'u' : vf[0] == 'Z' ? 'z' : vf[0]);
      f->format[1] = '\0';
    }
    return 0;
  }
  if (f->conv == PQ_CONV_BINARY) {
    if (!is_binary_like(of)) return 0;
    f->large = of[0] == 'U' || of[0] == 'Z';
    // sluice has no view types (see sl_type.c): a string_view / binary_view
    // column comes out as utf8 / binary, with the same values.
    if (of[0] == 'v') of++;
    strcpy(f->format, of);
    f->is_string = strchr(of, 'u') != NULL || strchr(of, 'U') != NULL;
    return 0;
  }
  struct sl_type ours, orig;
  if (sl_type_parse(f->format, &ours, NULL) != 0 || sl_type_parse(of, &orig, NULL) != 0) return 0;
  if (ours.id == SL_TYPE_TIMESTAMP && orig.id == SL_TYPE_TIMESTAMP) {
    if (strcmp(ours.timezone, "UTC") == 0 && orig.timezone[0] != '\0' &&
        strlen(orig.timezone) + 5 < sizeof f->format) {
      char unit = f->format[2];
      snprintf(f->format, sizeof f->format, "ts%c:%s", unit, orig.timezone);
    }
    return 0;
  }
  if (ours.id == SL_TYPE_INT64 && orig.id == SL_TYPE_DURATION) {
    if (strlen(of) < sizeof f->format) strcpy(f->format, of);
    return 0;
  }
  if (ours.id == SL_TYPE_DECIMAL128 || ours.id == SL_TYPE_DECIMAL256) {
    if ((orig.id == SL_TYPE_DECIMAL128 || orig.id == SL_TYPE_DECIMAL256) &&
        orig.precision == ours.precision && orig.scale == ours.scale &&
        (orig.byte_width == 4 || orig.byte_width == 8 || orig.byte_width == 16 || orig.byte_width == 32)) {
      int32_t width = orig.byte_width;
      if (f->conv == PQ_CONV_DEC_BE && f->element->type == PQ_FIXED_LEN_BYTE_ARRAY &&
          f->phys_width > width)
        return 0;
      f->out_width = width;
      if (width == 16) snprintf(f->format, sizeof f->format, "d:%d,%d", (int)ours.precision, (int)ours.scale);
      else snprintf(f->format, sizeof f->format, "d:%d,%d,%d", (int)ours.precision, (int)ours.scale, (int)width * 8);
    }
    return 0;
  }
  return 0;
}

static int apply(struct pq_field* f, const struct ArrowSchema* o, const struct sluice_allocator* alloc,
                 int depth) {
  if (depth > PQ_MAX_DEPTH || o == NULL || o->format == NULL) return 0;
  SL_RETURN_NOT_OK(copy_metadata(f, o, alloc));
  const char* of = o->format;
  // Run-end encoded columns are stored as their values (pyarrow decodes them
  // on write): the values' type applies.
  if (strcmp(of, "+r") == 0 && o->n_children == 2) return apply(f, o->children[1], alloc, depth + 1);
  // sluice has no list views: a list_view column comes out as a list.
  if ((strcmp(of, "+vl") == 0 || strcmp(of, "+vL") == 0) && f->kind == PQ_FIELD_LIST &&
      o->n_children == 1) {
    f->large = of[2] == 'L';
    return apply(&f->children[0], o->children[0], alloc, depth + 1);
  }
  switch (f->kind) {
    case PQ_FIELD_LEAF:
      return apply_leaf(f, o);
    case PQ_FIELD_STRUCT:
      if (strcmp(of, "+s") != 0 || o->n_children != f->n_children) return 0;
      for (int64_t i = 0; i < f->n_children; ++i)
        SL_RETURN_NOT_OK(apply(&f->children[i], o->children[i], alloc, depth + 1));
      return 0;
    case PQ_FIELD_LIST:
      if (strncmp(of, "+w:", 3) == 0 && o->n_children == 1) {
        SL_RETURN_NOT_OK(apply(&f->children[0], o->children[0], alloc, depth + 1));
        long n = strtol(of + 3, NULL, 10);
        if (n > 0 && n <= (1 << 20)) f->fixed_size = (int32_t)n;
        return 0;
      }
      if ((strcmp(of, "+l") != 0 && strcmp(of, "+L") != 0) || o->n_children != 1) return 0;
      f->large = of[1] == 'L';
      return apply(&f->children[0], o->children[0], alloc, depth + 1);
    case PQ_FIELD_MAP:
      if (strcmp(of, "+m") != 0 || o->n_children != 1) return 0;
      f->keys_sorted = (o->flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0;  // (as pyarrow restores it)
      return apply(&f->children[0], o->children[0], alloc, depth + 1);
  }
  return 0;
}

/// Parses the base64 IPC Schema message into `out`; 1 when usable.
static int parse_arrow_schema(const struct pq_bytes* v, const struct sluice_allocator* alloc,
                              const char* name, struct ipc_schema* out, int* ok,
                              struct sluice_error* error) {
  *ok = 0;
  if (v->size <= 0 || v->size > ((int64_t)64 << 20)) return 0;
  size_t cap = (size_t)(v->size / 4 * 3 + 8);
  uint8_t* raw = sl_alloc(alloc, cap);
  if (raw == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  int64_t n = base64_decode(v->data, v->size, raw);
  int rc = 0;
  struct ipc_where where = {.name = name, .offset = 0};
  struct sluice_error ignored;
  int64_t prefix, meta_len;
  struct ipc_message msg;
  if (n > 0 && sl_ipc_frame_prefix(raw, n, &prefix, &meta_len, &where, &ignored) == 0 &&
      meta_len > 0 && meta_len <= n - prefix &&
      sl_ipc_message_parse(raw + prefix, (size_t)meta_len, &where, &msg, &ignored) == 0 &&
      msg.header_type == IPC_MESSAGE_SCHEMA) {
    rc = sl_ipc_schema_parse(&msg.header, msg.version, IPC_SCHEMA_TYPES_ONLY, alloc, &where, out, &ignored);
    if (rc == ENOMEM) rc = sl_error_set(error, ENOMEM, "%s: out of memory", name);
    else if (rc == 0) *ok = 1;
    else rc = 0;
  }
  sl_free(alloc, raw, cap);
  return rc;
}

int sl_pq_schema_apply_arrow(struct pq_schema* s, const struct pq_file_meta* meta, const char* name,
                          struct sluice_error* error) {
  // The first entry, as Arrow C++ takes it: pyarrow writes the table's own
  // metadata (which may hold an ARROW:schema) before the one it makes.
  const struct pq_bytes* value = NULL;
  for (int64_t i = 0; value == NULL && i < meta->n_key_value_metadata; ++i) {
    const struct pq_key_value* kv = &meta->key_value_metadata[i];
    if (kv->key.size == 12 && memcmp(kv->key.data, "ARROW:schema", 12) == 0 && kv->value.present)
      value = &kv->value;
  }
  if (value == NULL) return 0;
  struct ipc_schema ipc;
  memset(&ipc, 0, sizeof ipc);
  int ok;
  SL_RETURN_NOT_OK(parse_arrow_schema(value, s->alloc, name, &ipc, &ok, error));
  if (!ok) return 0;
  int rc = 0;
  const struct ArrowSchema* o = &ipc.schema;
  struct pq_field* root = &s->root;
  if (o->n_children == root->n_children) {
    for (int64_t i = 0; rc == 0 && i < root->n_children; ++i) {
      const struct ArrowSchema* oc = o->children[i];
      if (oc->name == NULL || strcmp(oc->name, root->children[i].name) != 0) continue;
      rc = apply(&root->children[i], oc, s->alloc, 1);
    }
  }
  sl_ipc_schema_reset(&ipc);
  if (rc != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  return sl_pq_schema_rebuild_arrow(s, error);
}

int sl_pq_schema_rebuild_arrow(struct pq_schema* s, struct sluice_error* error) {
  struct pq_field* root = &s->root;
  struct ArrowSchema fresh;
  int rc;
  rc = sl_schema_init(&fresh, s->alloc, "+s", "", 0, root->n_children, error);
  for (int64_t i = 0; rc == 0 && i < root->n_children; ++i)
    rc = sl_pq_field_arrow_schema(&root->children[i], s->alloc, fresh.children[i], error);
  if (rc != 0) {
    if (fresh.release) fresh.release(&fresh);
    return rc;
  }
  if (s->arrow.release) s->arrow.release(&s->arrow);
  s->arrow = fresh;
  return 0;
}
