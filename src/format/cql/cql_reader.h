// The Apache Cassandra table reader ("cql"): `cql://host[:port]/keyspace.table`.
//
// Reads a whole table over the native protocol (v4). The plan splits the
// Murmur3 token ring into equal ranges; each split is one paged query,
//   SELECT <columns> FROM "ks"."t" WHERE token(<partition key>) > a AND ... <= b
// on a connection of its own (kept in a small pool for the next split), so
// the scan engine reads several ranges at once, one page per batch. Tables of
// other partitioners are read as one split. Only the projected columns are
// asked for. Types map as cql_type.c says.
//
// Format options: consistency=one|local_one|quorum|local_quorum|all
// (default local_one, as the drivers), page_rows=N (rows per page and batch,
// default 10000, or the scan's batch size), splits=N (token ranges, default
// 16; 1 reads the table with one query).
#ifndef SL_CQL_READER_H
#define SL_CQL_READER_H

#include "format/sl_format.h"

const struct sl_format_reader* sl_cql_reader(void);

#endif
