// Compiles the schema DAG once into a flat program (ops in pre-order, children
// as index lists), and binds a split's builder tree to it: one builder pointer
// per op, so decoding never walks the schema or searches for a builder.
#include <string.h>

#include "avro_internal.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"

// Shared named types are expanded per use; a small schema can still describe
// an exponential tree, so the expansion is capped.
#define AVRO_MAX_OPS (1 << 18)

void sl_avro_program_release(struct avro_program* p) {
  if (p == NULL) return;
  if (p->ops) sl_free(p->alloc, p->ops, (size_t)p->cap_ops * sizeof *p->ops);
  if (p->kids) sl_free(p->alloc, p->kids, (size_t)p->cap_kids * sizeof *p->kids);
  if (p->targets) sl_free(p->alloc, p->targets, (size_t)p->cap_kids * sizeof *p->targets);
  if (p->pool) sl_free(p->alloc, p->pool, (size_t)p->cap_pool);
  p->ops = NULL;
  p->kids = NULL;
  p->targets = NULL;
  p->pool = NULL;
  p->n_pool = p->cap_pool = 0;
  p->n_ops = p->cap_ops = p->n_kids = p->cap_kids = 0;
}

int64_t sl_avro_program_pool_add(struct avro_program* p, const void* data, int64_t n) {
  void* pool = p->pool;
  if (sl_grow_array(p->alloc, &pool, &p->cap_pool, p->n_pool + n + 1, 1) != 0) return -1;
  p->pool = pool;
  if (n > 0) memcpy(p->pool + p->n_pool, data, (size_t)n);
  p->n_pool += n;
  return p->n_pool - n;
}

/// Appends an op with `n_kids` child slots reserved (targets = positions);
/// returns its index or -1.
int32_t sl_avro_program_new_op(struct avro_program* p, uint8_t kind, int64_t n_kids,
                            const struct avro_node* node) {
  if (p->n_ops >= AVRO_MAX_OPS || p->n_kids + n_kids > AVRO_MAX_OPS) return -1;
  void* ops = p->ops;
  if (sl_grow_array(p->alloc, &ops, &p->cap_ops, p->n_ops + 1, sizeof *p->ops) != 0) {
    p->out_of_memory = 1;
    return -1;
  }
  p->ops = ops;
  if (p->n_kids + n_kids > p->cap_kids) {
    // kids and targets share one capacity.
    int64_t cap = p->cap_kids > 0 ? p->cap_kids * 2 : 64;
    while (cap < p->n_kids + n_kids) cap *= 2;
    int32_t* kids = sl_alloc(p->alloc, (size_t)cap * sizeof *kids);
    int32_t* targets = sl_alloc(p->alloc, (size_t)cap * sizeof *targets);
    if (kids == NULL || targets == NULL) {
      sl_free(p->alloc, kids, (size_t)cap * sizeof *kids);
      sl_free(p->alloc, targets, (size_t)cap * sizeof *targets);
      p->out_of_memory = 1;
      return -1;
    }
    if (p->n_kids > 0) {
      memcpy(kids, p->kids, (size_t)p->n_kids * sizeof *kids);
      memcpy(targets, p->targets, (size_t)p->n_kids * sizeof *targets);
    }
    if (p->kids) sl_free(p->alloc, p->kids, (size_t)p->cap_kids * sizeof *kids);
    if (p->targets) sl_free(p->alloc, p->targets, (size_t)p->cap_kids * sizeof *targets);
    p->kids = kids;
    p->targets = targets;
    p->cap_kids = cap;
  }
  for (int64_t k = 0; k < n_kids; ++k) p->targets[p->n_kids + k] = (int32_t)k;
  struct avro_op* op = &p->ops[p->n_ops];
  memset(op, 0, sizeof *op);
  op->kind = kind;
  op->n_kids = (int32_t)n_kids;
  op->kids = (int32_t)p->n_kids;
  op->node = node;
  p->n_kids += n_kids;
  return (int32_t)p->n_ops++;
}

#define new_op sl_avro_program_new_op
#define emit sl_avro_program_emit
#define too_big sl_avro_program_too_big

static int emit_kids(struct avro_program* p, int32_t op, struct avro_node* const* items,
                     int64_t n, struct sluice_error* error) {
  for (int64_t i = 0; i < n; ++i) {
    int32_t k;
    SL_RETURN_NOT_OK(emit(p, items[i], &k, error));
    p->kids[p->ops[op].kids + i] = k;
  }
  return 0;
}

int sl_avro_program_too_big(const struct avro_program* p, struct sluice_error* error) {
  if (p->out_of_memory) return sl_error_set(error, ENOMEM, "out of memory compiling the schema");
  return sl_error_set(error, EINVAL, "the Avro schema expands to more than %d values per row",
                      AVRO_MAX_OPS);
}

int sl_avro_program_emit(struct avro_program* p, const struct avro_node* n, int32_t* out,
                      struct sluice_error* error) {
  const struct avro_node* value;
  int null_index;
  int32_t op;
  if (sl_avro_node_nullable(n, &value, &null_index)) {
    if ((op = new_op(p, OP_NULLABLE, 1, n)) < 0) return too_big(p, error);
    p->ops[op].null_index = (int8_t)null_index;
    p->ops[op].min_size = 1;
    const struct avro_node* items[1] = {value};
    SL_RETURN_NOT_OK(emit_kids(p, op, (struct avro_node* const*)items, 1, error));
    *out = op;
    return 0;
  }
  uint8_t kind;
  int64_t n_kids = 0, min_size = 1, size = 0;
  switch (n->kind) {
    case AVRO_NULL: kind = OP_NULL; min_size = 0; break;
    case AVRO_BOOLEAN: kind = OP_BOOL; break;
    case AVRO_INT: case AVRO_LONG: {
      // A zone in arrow_type changes the type only; a width or a unit, the
      // values.
      const char* at = n->arrow_type;
      kind = n->kind == AVRO_INT ? OP_INT32 : OP_INT64;
      if (at[0] != '\0' && at[1] == '\0') {
        kind = OP_NARROW;
        size = at[0];
      } else if (strcmp(at, "tdm") == 0) {
        kind = OP_RESCALE;
        size = INT64_C(86400000);  // days → milliseconds
      } else if (strcmp(at, "tts") == 0 || strncmp(at, "tss:", 4) == 0) {
        kind = OP_RESCALE;
        size = -1000;  // milliseconds → seconds
      } else if (n->logical == AVRO_LOGICAL_TIME_MS || n->logical == AVRO_LOGICAL_TIME_US) {
        kind = OP_TIME;
        size = n->logical == AVRO_LOGICAL_TIME_MS ? INT64_C(86400000) : INT64_C(86400000000);
      }
      break;
    }
    case AVRO_FLOAT:
      kind = n->arrow_type[0] == 'e' ? OP_HALF : OP_FLOAT;
      min_size = 4;
      break;
    case AVRO_DOUBLE: kind = OP_DOUBLE; min_size = 8; break;
    case AVRO_BYTES: kind = n->logical == AVRO_LOGICAL_DECIMAL ? OP_DEC_BYTES : OP_BINARY; break;
    case AVRO_STRING: kind = OP_STRING; break;
    case AVRO_FIXED:
      kind = n->logical == AVRO_LOGICAL_DECIMAL ? OP_DEC_FIXED
             : n->logical == AVRO_LOGICAL_DURATION ? OP_DURATION : OP_FIXED;
      size = min_size = n->size;
      break;
    case AVRO_ENUM: kind = OP_ENUM; size = n->n; break;
    case AVRO_RECORD: kind = OP_RECORD; n_kids = n->n; min_size = 0; break;
    case AVRO_ARRAY: kind = OP_ARRAY; n_kids = 1; break;
    case AVRO_MAP: kind = OP_MAP; n_kids = 1; break;
    default: kind = OP_UNION; n_kids = n->n; break;
  }
  if ((op = new_op(p, kind, n_kids, n)) < 0) return too_big(p, error);
  p->ops[op].size = size;
  p->ops[op].min_size = min_size;
  if (n_kids > 0) SL_RETURN_NOT_OK(emit_kids(p, op, n->items, n_kids, error));
  if (kind == OP_RECORD) {
    int64_t total = 0;
    for (int32_t i = 0; i < p->ops[op].n_kids; ++i) {
      total += p->ops[p->kids[p->ops[op].kids + i]].min_size;
      if (total > INT32_MAX) total = INT32_MAX;  // only a lower bound is needed
    }
    p->ops[op].min_size = total;
  }
  *out = op;
  return 0;
}

int sl_avro_program_build(const struct avro_schema* s, struct avro_program* out,
                       struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  out->alloc = s->alloc;
  int32_t top;
  int rc;
  if (s->root->kind == AVRO_RECORD) {
    rc = emit(out, s->root, &top, error);
  } else {
    // A non-record root becomes the single column "value" of a wrapper row.
    top = new_op(out, OP_RECORD, 1, NULL);
    rc = top < 0 ? too_big(out, error) : emit_kids(out, top, &s->root, 1, error);
    // A row takes what its value takes (load_block bounds counts by it).
    if (rc == 0) out->ops[top].min_size = out->ops[out->kids[out->ops[top].kids]].min_size;
  }
  if (rc != 0) sl_avro_program_release(out);
  return rc;
}

static int bind_op(const struct avro_program* p, int32_t i, struct sl_builder* b,
                   struct sl_builder** bld, struct sluice_error* error) {
  const struct avro_op* op = &p->ops[i];
  bld[i] = b;
  const int32_t* kids = p->kids + op->kids;
  switch (op->kind) {
    case OP_RECORD:
      for (int32_t k = 0; k < op->n_kids; ++k) {
        int32_t t = p->targets[op->kids + k];
        if (t < 0) continue;  // a writer field the reader schema drops: skipped
        if (t >= b->n_children) return sl_error_set(error, EINVAL, "Avro program and builders "
                                                    "disagree (op %d)", (int)i);
        SL_RETURN_NOT_OK(bind_op(p, kids[k], &b->children[t], bld, error));
      }
      return 0;
    case OP_UNION:
      if (b->n_children != op->n_kids) break;
      for (int32_t k = 0; k < op->n_kids; ++k)
        SL_RETURN_NOT_OK(bind_op(p, kids[k], &b->children[k], bld, error));
      return 0;
    case OP_DEFAULT:
      return bind_op(p, kids[0], b, bld, error);
    case OP_TO_BRANCH:
      if (op->size >= b->n_children) break;
      return bind_op(p, kids[0], &b->children[op->size], bld, error);
    case OP_UNION_MAP: case OP_UNION_TO_ONE:
      for (int32_t k = 0; k < op->n_kids; ++k) {
        int32_t t = p->targets[op->kids + k];
        if (t < 0) continue;  // a writer branch the reader cannot take: an error if met
        if (op->kind == OP_UNION_MAP && t >= b->n_children) break;
        SL_RETURN_NOT_OK(bind_op(p, kids[k], op->kind == OP_UNION_MAP ? &b->children[t] : b,
                                 bld, error));
      }
      return 0;
    case OP_ARRAY:
      if (b->n_children != 1) break;
      return bind_op(p, kids[0], &b->children[0], bld, error);
    case OP_MAP:
      if (b->n_children != 1 || b->children[0].n_children != 2) break;
      return bind_op(p, kids[0], &b->children[0].children[1], bld, error);
    case OP_NULLABLE:
      return bind_op(p, kids[0], b, bld, error);
    case OP_ENUM: case OP_ENUM_MAP: {
      struct sl_builder* dict = sl_builder_dictionary(b);
      if (dict == NULL) break;
      // The symbols are the same for every batch: one frozen dictionary that
      // every batch of the split shares.
      for (int64_t k = 0; k < op->node->n; ++k)
        if (sl_builder_append_string(dict, op->node->names[k]) != 0)
          return sl_error_set(error, ENOMEM, "out of memory for enum symbols");
      return sl_builder_freeze_dictionary(b, error);
    }
    default:
      return 0;
  }
  return sl_error_set(error, EINVAL, "Avro program and builders disagree (op %d)", (int)i);
}

int sl_avro_program_bind(const struct avro_program* p, struct sl_builder* root,
                      const int64_t* columns, int64_t n_columns, struct sl_builder** bld,
                      struct sluice_error* error) {
  const struct avro_op* top = &p->ops[0];
  int64_t n = columns ? n_columns : root->n_children;
  if (root->n_children != n)
    return sl_error_set(error, EINVAL, "Avro program and builders disagree (columns)");
  for (int64_t i = 0; i < p->n_ops; ++i) bld[i] = NULL;
  bld[0] = root;
  // The kid of each target column (the first that has it; -1: none), indexed:
  // searching the kids for each column took seconds on 100k columns.
  int32_t n_targets = 0;
  for (int32_t j = 0; j < top->n_kids; ++j)
    if (p->targets[top->kids + j] >= n_targets) n_targets = p->targets[top->kids + j] + 1;
  int32_t* kid_of = sl_alloc(p->alloc, (size_t)(n_targets > 0 ? n_targets : 1) * sizeof *kid_of);
  if (kid_of == NULL) return sl_error_set(error, ENOMEM, "out of memory binding the Avro columns");
  for (int32_t t = 0; t < n_targets; ++t) kid_of[t] = -1;
  for (int32_t j = 0; j < top->n_kids; ++j) {
    int32_t t = p->targets[top->kids + j];
    if (t >= 0 && kid_of[t] < 0) kid_of[t] = p->kids[top->kids + j];
  }
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    int64_t c = columns ? columns[i] : i;
    if (c < 0) {
      rc = sl_error_set(error, EINVAL, "column %lld out of range", (long long)c);
      break;
    }
    int32_t k = c < n_targets ? kid_of[c] : -1;
    if (k < 0) {
      rc = sl_error_set(error, EINVAL, "column %lld has no Avro field", (long long)c);
    } else if (bld[k] != NULL) {
      // Column c is the record's field c (the reader's, under a reader schema).
      const char* name = top->node != NULL && top->node->kind == AVRO_RECORD && c < top->node->n
                             ? top->node->names[c] : "value";
      rc = sl_error_set(error, EINVAL, "column '%s' is bound twice (the scan passes "
                        "each column once)", name);
    } else {
      rc = bind_op(p, k, &root->children[i], bld, error);
    }
  }
  sl_free(p->alloc, kid_of, (size_t)(n_targets > 0 ? n_targets : 1) * sizeof *kid_of);
  return rc;
}
