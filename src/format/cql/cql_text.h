// CQL text the table reader and writer both need: quoted identifiers and the
// options they share (consistency level, tls).
#ifndef CQL_TEXT_H
#define CQL_TEXT_H

#include <stddef.h>

#include "sluice.h"
#include "../../core/sl_value_text.h"

/// Appends `name` as a quoted CQL identifier ("a""b").
int cql_append_ident(struct sl_text* text, const char* name);

/// The protocol's level for a consistency option value (one, local_one,
/// quorum, local_quorum, all), or EINVAL with a message naming `format`
/// ("cql" / "cql write").
int cql_parse_consistency(const char* value, size_t n, const char* format, int* level,
                          struct sluice_error* error);

/// true|false (also 1|0) for option `key`, else EINVAL naming `format`.
int cql_parse_bool(const char* value, size_t n, const char* format, const char* key, int* out,
                   struct sluice_error* error);

#endif
