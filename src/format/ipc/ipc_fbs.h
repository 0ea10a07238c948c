// Constants of the Arrow IPC flatbuffer schema (apache/arrow format/Schema.fbs,
// Message.fbs, File.fbs): enum values and vtable field slots. A slot is the
// index of a field in declaration order; a union field takes two slots (its
// `_type` discriminator, then the value), which is why e.g. Field.type is 3.
// Shared by the IPC reader and writer; kept byte-for-byte in step with the
// .fbs files because both sides must agree with every other Arrow
// implementation, not only with each other.
#ifndef SL_IPC_FBS_H
#define SL_IPC_FBS_H

/* ---- Enums --------------------------------------------------------------- */

/// MetadataVersion (short). V4 = Arrow >= 0.8, V5 = Arrow >= 1.0.
enum ipc_metadata_version {
  IPC_METADATA_V1 = 0,
  IPC_METADATA_V2 = 1,
  IPC_METADATA_V3 = 2,
  IPC_METADATA_V4 = 3,
  IPC_METADATA_V5 = 4,
};

/// Feature (long): values of Schema.features.
enum ipc_feature {
  IPC_FEATURE_UNUSED = 0,
  IPC_FEATURE_DICTIONARY_REPLACEMENT = 1,
  IPC_FEATURE_COMPRESSED_BODY = 2,
};

/// union Type (ubyte discriminator of Field.type). 0 = NONE.
enum ipc_type {
  IPC_TYPE_NONE = 0,
  IPC_TYPE_NULL = 1,
  IPC_TYPE_INT = 2,
  IPC_TYPE_FLOATING_POINT = 3,
  IPC_TYPE_BINARY = 4,
  IPC_TYPE_UTF8 = 5,
  IPC_TYPE_BOOL = 6,
  IPC_TYPE_DECIMAL = 7,
  IPC_TYPE_DATE = 8,
  IPC_TYPE_TIME = 9,
  IPC_TYPE_TIMESTAMP = 10,
  IPC_TYPE_INTERVAL = 11,
  IPC_TYPE_LIST = 12,
  IPC_TYPE_STRUCT = 13,
  IPC_TYPE_UNION = 14,
  IPC_TYPE_FIXED_SIZE_BINARY = 15,
  IPC_TYPE_FIXED_SIZE_LIST = 16,
  IPC_TYPE_MAP = 17,
  IPC_TYPE_DURATION = 18,
  IPC_TYPE_LARGE_BINARY = 19,
  IPC_TYPE_LARGE_UTF8 = 20,
  IPC_TYPE_LARGE_LIST = 21,
  IPC_TYPE_RUN_END_ENCODED = 22,
  IPC_TYPE_BINARY_VIEW = 23,
  IPC_TYPE_UTF8_VIEW = 24,
  IPC_TYPE_LIST_VIEW = 25,
  IPC_TYPE_LARGE_LIST_VIEW = 26,
};

/// Precision (short) of FloatingPoint.
enum ipc_precision { IPC_PRECISION_HALF = 0, IPC_PRECISION_SINGLE = 1, IPC_PRECISION_DOUBLE = 2 };

/// DateUnit (short). Date.unit defaults to MILLISECOND.
enum ipc_date_unit { IPC_DATE_DAY = 0, IPC_DATE_MILLISECOND = 1 };

/// TimeUnit (short). Time.unit and Duration.unit default to MILLISECOND.
enum ipc_time_unit {
  IPC_TIME_SECOND = 0,
  IPC_TIME_MILLISECOND = 1,
  IPC_TIME_MICROSECOND = 2,
  IPC_TIME_NANOSECOND = 3,
};

/// IntervalUnit (short).
enum ipc_interval_unit {
  IPC_INTERVAL_YEAR_MONTH = 0,
  IPC_INTERVAL_DAY_TIME = 1,
  IPC_INTERVAL_MONTH_DAY_NANO = 2,
};

/// UnionMode (short).
enum ipc_union_mode { IPC_UNION_SPARSE = 0, IPC_UNION_DENSE = 1 };

/// Endianness (short) of Schema.
enum ipc_endianness { IPC_ENDIAN_LITTLE = 0, IPC_ENDIAN_BIG = 1 };

/// DictionaryKind (short).
enum ipc_dictionary_kind { IPC_DICTIONARY_DENSE_ARRAY = 0 };

/// CompressionType (byte) of BodyCompression.codec.
enum ipc_compression_type { IPC_COMPRESSION_LZ4_FRAME = 0, IPC_COMPRESSION_ZSTD = 1 };

/// BodyCompressionMethod (byte).
enum ipc_body_compression_method { IPC_BODY_COMPRESSION_BUFFER = 0 };

/// union MessageHeader (ubyte discriminator of Message.header).
enum ipc_message_header {
  IPC_MESSAGE_NONE = 0,
  IPC_MESSAGE_SCHEMA = 1,
  IPC_MESSAGE_DICTIONARY_BATCH = 2,
  IPC_MESSAGE_RECORD_BATCH = 3,
  IPC_MESSAGE_TENSOR = 4,
  IPC_MESSAGE_SPARSE_TENSOR = 5,
};

/* ---- Vtable slots (field index in declaration order) -------------------- */
// Schema.fbs

/// table FixedSizeList { listSize: int; }
#define IPC_FIXED_SIZE_LIST_LIST_SIZE 0
/// table Map { keysSorted: bool; }
#define IPC_MAP_KEYS_SORTED 0
/// table Union { mode: UnionMode; typeIds: [int]; }
#define IPC_UNION_MODE 0
#define IPC_UNION_TYPE_IDS 1
/// table Int { bitWidth: int; is_signed: bool; }
#define IPC_INT_BIT_WIDTH 0
#define IPC_INT_IS_SIGNED 1
/// table FloatingPoint { precision: Precision; }
#define IPC_FLOATING_POINT_PRECISION 0
/// table FixedSizeBinary { byteWidth: int; }
#define IPC_FIXED_SIZE_BINARY_BYTE_WIDTH 0
/// table Decimal { precision: int; scale: int; bitWidth: int = 128; }
#define IPC_DECIMAL_PRECISION 0
#define IPC_DECIMAL_SCALE 1
#define IPC_DECIMAL_BIT_WIDTH 2
/// table Date { unit: DateUnit = MILLISECOND; }
#define IPC_DATE_UNIT 0
/// table Time { unit: TimeUnit = MILLISECOND; bitWidth: int = 32; }
#define IPC_TIME_UNIT 0
#define IPC_TIME_BIT_WIDTH 1
/// table Timestamp { unit: TimeUnit; timezone: string; }
#define IPC_TIMESTAMP_UNIT 0
#define IPC_TIMESTAMP_TIMEZONE 1
/// table Interval { unit: IntervalUnit; }
#define IPC_INTERVAL_UNIT 0
/// table Duration { unit: TimeUnit = MILLISECOND; }
#define IPC_DURATION_UNIT 0
/// table KeyValue { key: string; value: string; }
#define IPC_KEY_VALUE_KEY 0
#define IPC_KEY_VALUE_VALUE 1
/// table DictionaryEncoding { id: long; indexType: Int; isOrdered: bool;
///                            dictionaryKind: DictionaryKind; }
#define IPC_DICTIONARY_ENCODING_ID 0
#define IPC_DICTIONARY_ENCODING_INDEX_TYPE 1
#define IPC_DICTIONARY_ENCODING_IS_ORDERED 2
#define IPC_DICTIONARY_ENCODING_KIND 3
/// table Field { name: string; nullable: bool; type: Type (2 slots);
///               dictionary: DictionaryEncoding; children: [Field];
///               custom_metadata: [KeyValue]; }
#define IPC_FIELD_NAME 0
#define IPC_FIELD_NULLABLE 1
#define IPC_FIELD_TYPE_TYPE 2
#define IPC_FIELD_TYPE 3
#define IPC_FIELD_DICTIONARY 4
#define IPC_FIELD_CHILDREN 5
#define IPC_FIELD_CUSTOM_METADATA 6
/// table Schema { endianness: Endianness = Little; fields: [Field];
///                custom_metadata: [KeyValue]; features: [Feature]; }
#define IPC_SCHEMA_ENDIANNESS 0
#define IPC_SCHEMA_FIELDS 1
#define IPC_SCHEMA_CUSTOM_METADATA 2
#define IPC_SCHEMA_FEATURES 3
/// struct Buffer { offset: long; length: long; } — 16 bytes inline.
#define IPC_BUFFER_STRUCT_SIZE 16

// Message.fbs

/// struct FieldNode { length: long; null_count: long; } — 16 bytes inline.
#define IPC_FIELD_NODE_STRUCT_SIZE 16
/// table BodyCompression { codec: CompressionType = LZ4_FRAME;
///                         method: BodyCompressionMethod = BUFFER; }
#define IPC_BODY_COMPRESSION_CODEC 0
#define IPC_BODY_COMPRESSION_METHOD 1
/// table RecordBatch { length: long; nodes: [FieldNode]; buffers: [Buffer];
///                     compression: BodyCompression; variadicBufferCounts: [long]; }
#define IPC_RECORD_BATCH_LENGTH 0
#define IPC_RECORD_BATCH_NODES 1
#define IPC_RECORD_BATCH_BUFFERS 2
#define IPC_RECORD_BATCH_COMPRESSION 3
#define IPC_RECORD_BATCH_VARIADIC_BUFFER_COUNTS 4
/// table DictionaryBatch { id: long; data: RecordBatch; isDelta: bool = false; }
#define IPC_DICTIONARY_BATCH_ID 0
#define IPC_DICTIONARY_BATCH_DATA 1
#define IPC_DICTIONARY_BATCH_IS_DELTA 2
/// table Message { version: MetadataVersion; header: MessageHeader (2 slots);
///                 bodyLength: long; custom_metadata: [KeyValue]; }
#define IPC_MESSAGE_VERSION 0
#define IPC_MESSAGE_HEADER_TYPE 1
#define IPC_MESSAGE_HEADER 2
#define IPC_MESSAGE_BODY_LENGTH 3
#define IPC_MESSAGE_CUSTOM_METADATA 4

// File.fbs

/// struct Block { offset: long; metaDataLength: int; (4 bytes padding)
///                bodyLength: long; } — 24 bytes inline.
#define IPC_BLOCK_STRUCT_SIZE 24
#define IPC_BLOCK_OFFSET_AT 0
#define IPC_BLOCK_META_DATA_LENGTH_AT 8
#define IPC_BLOCK_BODY_LENGTH_AT 16
/// table Footer { version: MetadataVersion; schema: Schema;
///                dictionaries: [Block]; recordBatches: [Block];
///                custom_metadata: [KeyValue]; }
#define IPC_FOOTER_VERSION 0
#define IPC_FOOTER_SCHEMA 1
#define IPC_FOOTER_DICTIONARIES 2
#define IPC_FOOTER_RECORD_BATCHES 3
#define IPC_FOOTER_CUSTOM_METADATA 4

/* ---- Framing ------------------------------------------------------------- */

/// Marks the start of an encapsulated message (since Arrow 0.15); a message
/// without it starts directly with the int32 metadata length (legacy framing).
#define IPC_CONTINUATION_MARKER 0xFFFFFFFFu
/// "ARROW1" at the start (padded to 8 with two zero bytes) and at the end of a
/// file.
#define IPC_FILE_MAGIC "ARROW1"
#define IPC_FILE_MAGIC_LEN 6
#define IPC_FILE_HEADER_LEN 8
/// Message bodies and metadata are padded to this multiple.
#define IPC_ALIGNMENT 8

#endif
