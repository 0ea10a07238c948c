// CREATE TABLE for the cql:// writer's create=true option.
#ifndef CQL_CREATE_H
#define CQL_CREATE_H

#include "sluice.h"
#include "../../core/sl_value_text.h"

/// CREATE TABLE IF NOT EXISTS "keyspace"."table" with the columns of `row`
/// (of `schema`, whose extension names tell uuids; may be NULL) (each Arrow type as the CQL type the writer encodes it to; collections
/// and tuples frozen where CQL wants them so) and PRIMARY KEY ((partition
/// key), clustering key), both '|'-separated column names (clustering_key
/// may be NULL or ""), into `t`. EINVAL for a key that names no column or
/// one twice, ENOTSUP for a column of a type CQL has no type for; `name`
/// (the location) starts messages.
int sl_cql_create_text(const char* keyspace, const char* table, const struct sl_text_field* row,
                    const struct ArrowSchema* schema, const char* partition_key,
                    const char* clustering_key, const char* name,
                    const struct sluice_allocator* alloc, struct sl_text* t,
                    struct sluice_error* error);

#endif
